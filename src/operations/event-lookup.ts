import { filteredTargetsOf } from '../forwarding/fanout-result';
import { deliveryStory, type AttemptView, type SeriesView } from '../forwarding/delivery-story';
import { isDropped, type QuarantineJob } from '../model/jobs';
import { eventDefinition } from '../model/event-table';
import { eventFactsOf } from '../model/event-facts';
import type { EventCopies, EventDelivery, EventLookup, FoundEvent } from '../pipeline/lookup';
import { parsePayload } from '../receiving/parse-payload';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../receiving/json-depth';
import { traceIdOf } from '../tracing/traceparent';
import type { ArchiveHistory } from '../archive/history';
import { archivedView } from './archived-event';
import type { DeliveryView, EventView } from './event-view';

export type { AttemptView, DeliveryView, EventCopies, EventView, SeriesView };

async function deliveryView(delivery: EventDelivery): Promise<DeliveryView> {
  if ('unreadable' in delivery)
    return {
      target: delivery.target,
      state: 'unreadable',
      unreadable: delivery.unreadable,
      attemptsMade: 0,
      totalAttempts: 0,
      failedAttempts: [],
      attempts: [],
      series: [],
    };
  const { target, queue, job } = delivery;
  const [state, logs] = await Promise.all([job.getState(), queue.getJobLogs(job.id ?? '')]);
  const series = deliveryStory(job, state, logs.logs);
  const attempts = series.flatMap((s) => s.attempts);
  const failedAttempts = attempts
    .filter((a): a is Extract<AttemptView, { outcome: 'failed' }> => a.outcome === 'failed')
    .map(({ outcome: _o, series: _s, ...f }) => f);
  const dropped = state === 'completed' && isDropped(job.returnvalue);
  return {
    target,
    state: dropped ? 'dropped' : state,
    attemptsMade: job.attemptsMade,
    totalAttempts: attempts.length,
    deliveredAt:
      state === 'completed' && !dropped && job.finishedOn ? new Date(job.finishedOn).toISOString() : undefined,
    result: job.returnvalue ?? undefined,
    failedReason: job.failedReason || undefined,
    failedAttempts,
    attempts,
    series,
  };
}

function filteredView(target: string): DeliveryView {
  return { target, state: 'filtered', attemptsMade: 0, totalAttempts: 0, failedAttempts: [], attempts: [], series: [] };
}

/**
 * The payload of a routed event: its delivery jobs carry the body as received, which passed its
 * schema at receipt (the event job that held the parsed payload is not written for routed events).
 */
function payloadOf(found: FoundEvent): unknown {
  const data = found.job.data;
  if ('payload' in data) return data.payload;
  if (found.kind === 'quarantine') return quarantinedJsonOf(found.job.data);
  if (found.kind !== 'delivery' || data.rawBodyEncoding !== 'utf8') return undefined;
  const parsed = parsePayload(eventDefinition(data.eventType), data.rawBody);
  return parsed.ok ? parsed.payload : undefined;
}

/**
 * A quarantined body that is JSON (whatever its schema says), parsed; undefined when it is not JSON,
 * or nests too deep to be masked (then it is shown as text).
 */
function quarantinedJsonOf(data: QuarantineJob): unknown {
  if (data.rawBodyEncoding !== 'utf8' || nestsDeeperThan(data.rawBody, MAX_JSON_DEPTH)) return undefined;
  try {
    return JSON.parse(data.rawBody) as unknown;
  } catch {
    return undefined;
  }
}

/** A quarantined body that is not JSON, as received: shown as text so an operator can judge it. */
function unparsedBodyOf(found: FoundEvent): Pick<EventView, 'body' | 'bodyEncoding'> {
  if (found.kind !== 'quarantine' || quarantinedJsonOf(found.job.data) !== undefined) return {};
  return { body: found.job.data.rawBody, bodyEncoding: found.job.data.rawBodyEncoding };
}

/**
 * The masked payload, or none when a stored body cannot be shown: the view of a stored event never fails on its
 * content.
 */
function maskedPayloadOf(found: FoundEvent, mask: (p: unknown) => unknown): unknown {
  try {
    const payload = payloadOf(found);
    return payload === undefined ? undefined : mask(payload);
  } catch {
    return undefined;
  }
}

/**
 * The targets whose filter left the event out: recorded on each delivery job when the receiver fanned
 * out, or in the fan-out step's return value when the fan-out worker did (no subscribed target took it).
 */
function filteredTargets(found: FoundEvent): string[] {
  if (found.kind === 'delivery') return found.job.data.filtered ?? [];
  return filteredTargetsOf(found.job.returnvalue);
}

/**
 * An event by its id: where it is, its payload (masked), and each target's delivery with every
 * attempt; a target whose filter left the event out is shown as a delivery in state `filtered`. A
 * routed event is held by its delivery jobs (state `routed`, `queue` the first target's); an unrouted
 * one by its event job, a quarantined one by its quarantine job (their job's state). A delivery job
 * that cannot be read is shown in state `unreadable` with why; when no job of the event can be read,
 * the lookup refuses (UnreadableEventError, 409).
 */
export async function findEvent(
  pipeline: Pick<EventLookup, 'findEvent' | 'deliveriesOf' | 'copiesOf'>,
  eventId: string,
  mask: (p: unknown) => unknown,
  archive?: Pick<ArchiveHistory, 'event'>,
): Promise<EventView | undefined> {
  const found = await pipeline.findEvent(eventId);
  if (!found) {
    const archived = await archive?.event(eventId);
    return archived && archivedView(archived, mask);
  }
  const { queue, job } = found;
  const withJobs = await Promise.all((await pipeline.deliveriesOf(eventId)).map(deliveryView));
  // A delivery job wins over the record: a fan-out retried after a reload changed a filter can leave both.
  const filtered = filteredTargets(found)
    .filter((t) => !withJobs.some((d) => d.target === t))
    .map(filteredView);
  const data = job.data;
  const payload = maskedPayloadOf(found, mask);
  const traceId = traceIdOf(data.trace);
  const copies = found.kind === 'quarantine' ? undefined : await pipeline.copiesOf(eventId);
  return {
    eventId,
    queue: queue.name,
    jobId: job.id ?? '',
    state: found.kind === 'delivery' ? 'routed' : await job.getState(),
    eventType: data.eventType,
    receivedAt: data.receivedAt,
    path: data.path,
    merchantId: data.merchantId,
    environment: data.environment,
    ...(data.corrected ? { corrected: true as const } : {}),
    ...(traceId ? { traceId } : {}),
    ...(found.kind === 'quarantine' ? { quarantineReason: found.job.data.reason ?? 'invalid' } : {}),
    ...(copies ? { copies } : {}),
    payload,
    facts: eventFactsOf(payload),
    ...unparsedBodyOf(found),
    errors: 'errors' in data ? data.errors : undefined,
    deliveries: [...withJobs, ...filtered],
  };
}

/**
 * The event ids of a platform `request_id`: Redis's index (kept for the de-duplication window) and,
 * when an archive is configured, the archive's rows, together.
 */
export async function eventIdsForRequest(
  pipeline: Pick<EventLookup, 'eventIdsForRequest'>,
  requestId: string,
  archive?: Pick<ArchiveHistory, 'eventIdsForRequest'>,
): Promise<string[]> {
  const [live, archived] = await Promise.all([
    pipeline.eventIdsForRequest(requestId),
    archive ? archive.eventIdsForRequest(requestId) : [],
  ]);
  return [...new Set([...live, ...archived])].sort();
}
