import { filteredTargetsOf } from '../forwarding/fanout-result';
import type { DeliveryFailure, DeliveryResult } from '../pipeline/jobs';
import { eventDefinition } from '../events/table';
import type { FoundEvent, Pipeline } from '../pipeline/pipeline';
import { parsePayload } from '../receiving/parse-payload';
import type { DeliveryQueue } from '../pipeline/queues';

export interface DeliveryView {
  target: string;
  /** The delivery job's BullMQ state, or `filtered`: the target's filter left the event out, so it has no job. */
  state: string;
  attemptsMade: number;
  deliveredAt?: string;
  result?: unknown;
  failedReason?: string;
  /** Every failed attempt, oldest first. */
  failedAttempts: DeliveryFailure[];
  /** Every attempt, oldest first: the failed ones, then the one that delivered. */
  attempts: AttemptView[];
}

export type AttemptView = (DeliveryFailure & { outcome: 'failed' }) | (DeliveryResult & { outcome: 'delivered'; at: string; attempt: number; target: string });

export interface EventView {
  eventId: string;
  queue: string;
  jobId: string;
  state: string;
  eventType: string;
  receivedAt: string;
  path: string;
  merchantId?: string;
  payload?: unknown;
  errors?: string[];
  deliveries: DeliveryView[];
}

async function deliveryView(target: string, queue: DeliveryQueue, eventId: string): Promise<DeliveryView | undefined> {
  const job = await queue.getJob(eventId);
  if (!job) return undefined;
  const [state, logs] = await Promise.all([job.getState(), queue.getJobLogs(eventId)]);
  const failedAttempts = logs.logs.flatMap(parseAttempt);
  const attempts: AttemptView[] = failedAttempts.map((f) => ({ ...f, outcome: 'failed' as const }));
  if (state === 'completed' && job.returnvalue && job.finishedOn) {
    attempts.push({ ...job.returnvalue, outcome: 'delivered', at: new Date(job.finishedOn).toISOString(), attempt: job.attemptsMade, target });
  }
  return {
    target,
    state,
    attemptsMade: job.attemptsMade,
    deliveredAt: state === 'completed' && job.finishedOn ? new Date(job.finishedOn).toISOString() : undefined,
    result: job.returnvalue ?? undefined,
    failedReason: job.failedReason || undefined,
    failedAttempts,
    attempts,
  };
}

/** One attempt log line; a line that is not one (written by hand, or cut short) is left out rather than failing the view. */
function parseAttempt(line: string): DeliveryFailure[] {
  try {
    const attempt: unknown = JSON.parse(line);
    return typeof attempt === 'object' && attempt !== null ? [attempt as DeliveryFailure] : [];
  } catch {
    return [];
  }
}

function filteredView(target: string): DeliveryView {
  return { target, state: 'filtered', attemptsMade: 0, failedAttempts: [], attempts: [] };
}

/**
 * The payload of a routed event: its delivery jobs carry the body as received, which passed its
 * schema at receipt (the event job that held the parsed payload is not written for routed events).
 */
function payloadOf(found: FoundEvent): unknown {
  const data = found.job.data;
  if ('payload' in data) return data.payload;
  if (found.kind !== 'delivery' || data.rawBodyEncoding !== 'utf8') return undefined;
  const parsed = parsePayload(eventDefinition(data.eventType), data.rawBody);
  return parsed.ok ? parsed.payload : undefined;
}

/** The masked payload, or none when a stored body cannot be shown: the view of a stored event never fails on its content. */
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
 * one by its event job, a quarantined one by its quarantine job (their job's state).
 */
export async function findEvent(pipeline: Pipeline, eventId: string, mask: (p: unknown) => unknown): Promise<EventView | undefined> {
  const found = await pipeline.findEvent(eventId);
  if (!found) return undefined;
  const { queue, job } = found;
  const withJobs = (await Promise.all(pipeline.deliveryQueues().map(([target, queue]) => deliveryView(target, queue, eventId)))).filter((d): d is DeliveryView => d !== undefined);
  // A delivery job wins over the record: a fan-out retried after a reload changed a filter can leave both.
  const filtered = filteredTargets(found).filter((t) => !withJobs.some((d) => d.target === t)).map(filteredView);
  const data = job.data;
  const payload = maskedPayloadOf(found, mask);
  return {
    eventId,
    queue: queue.name,
    jobId: job.id ?? '',
    state: found.kind === 'delivery' ? 'routed' : await job.getState(),
    eventType: data.eventType,
    receivedAt: data.receivedAt,
    path: data.path,
    merchantId: data.merchantId,
    payload,
    errors: 'errors' in data ? data.errors : undefined,
    deliveries: [...withJobs, ...filtered],
  };
}
