import { takesEnvironment } from '../model/environments';
import { markSeriesStart } from '../forwarding/delivery-story';
import { planDeliveries, type PlannedEvent } from '../routing/plan';
import { subscribes, type Target } from '../model/target-schema';
import { decodeRawBody, type DeliveryFields } from '../model/jobs';
import { isEventId } from '../model/ids';
import type { EventLookup } from '../pipeline/lookup';
import type { Producer } from '../pipeline/producer';
import type { QueueRegistry } from '../pipeline/queue-registry';
import { UnknownTargetError } from './dead-letters';
import { ServiceError } from '../model/errors';
import { asOperator, type OperatorSpan } from '../tracing/tracing';
import { SpanAttribute } from '../tracing/attributes';

/**
 * `filtered`: the target's filter leaves the event out, so nothing is sent; a resend does not
 * override it, since a filter may be what keeps one sub-merchant's events from another's system.
 */
export type ResendOutcome = 'resent' | 'in_progress' | 'filtered';

export interface ResendResult {
  eventId: string;
  /**
   * Each target and what happened: a new attempt series, none because one is under way, or none because its filter
   * leaves the event out.
   */
  targets: { target: string; outcome: ResendOutcome }[];
}

/** An event id nobody knows: never received, or past the de-duplication window. 404. */
export class UnknownEventError extends ServiceError {
  readonly code = 'not_found';
  readonly status = 404;
  constructor(readonly eventId: string) {
    super(`no event ${eventId} (unknown, or past the de-duplication window)`);
  }
}

/** The event was received, but no job holds its body any more (completed-job retention). 410. */
export class EventBodyGoneError extends ServiceError {
  readonly code = 'body_gone';
  readonly status = 410;
  constructor(
    readonly eventId: string,
    retentionSeconds: number,
  ) {
    super(
      `event ${eventId} was received, but its body is gone: delivered jobs are kept ${retentionSeconds} s ` +
        `(retention.completed), so it can no longer be resent`,
    );
  }
}

/** The named target does not take this event's type. 400. */
export class NotSubscribedError extends ServiceError {
  readonly code = 'not_subscribed';
  readonly status = 400;
  constructor(target: string, eventType: string) {
    super(`target "${target}" does not subscribe to ${eventType}`);
  }
}

/**
 * Sends an event again, to one target or to every target subscribed to its type, as a new attempt
 * series of the same delivery job, so it keeps its `webhook-id`, whether the earlier delivery
 * succeeded or failed. Possible while some job still holds the body: the delivery jobs and the event
 * job are kept for the completed-job retention after they finish (dead letters for ever).
 */
export function createResender(
  pipeline: Pick<Producer, 'addDeliveries'> &
    Pick<QueueRegistry, 'targets' | 'deliveryQueue' | 'deliveryQueues' | 'options'> &
    Pick<EventLookup, 'findEvent' | 'isKnown'>,
) {
  /** Any job that still holds the event's body, and whether the event is known at all. */
  async function findBody(eventId: string): Promise<{ body?: DeliveryFields; known: boolean }> {
    if (!isEventId(eventId)) return { known: false };
    for (const [, queue] of pipeline.deliveryQueues()) {
      const job = await queue.getJob(eventId);
      // Another target's delivery carries the event's fields; planning copies only those, never its target's own.
      if (job) return { body: job.data, known: true };
    }
    const found = await pipeline.findEvent(eventId);
    if (found?.kind === 'event') return { body: found.job.data, known: true };
    if (found) return { known: true };
    // Past the retention the jobs are gone, but the de-duplication record still knows the id.
    return { known: await pipeline.isKnown(eventId) };
  }

  async function resendTo(target: Target, event: PlannedEvent, by: string): Promise<ResendOutcome> {
    const queue = pipeline.deliveryQueue(target.name);
    if (!queue) throw new UnknownTargetError(target.name);
    const existing = await queue.getJob(event.eventId);
    if (existing) {
      const state = await existing.getState();
      if (state !== 'completed' && state !== 'failed') return 'in_progress';
      await markSeriesStart(existing, 'resend', by);
      await existing.retry(state, { resetAttemptsMade: true, resetAttemptsStarted: true });
      return 'resent';
    }
    await pipeline.addDeliveries(event, [target], { series: 'resend', by, at: new Date().toISOString() });
    return 'resent';
  }

  return {
    /**
     * `by`: the operator, for the new series' mark in each delivery's story. While tracing is on, the
     * resend is a span of its own, linked to the trace the event was received in; the new attempts
     * join that trace (the job keeps its `traceparent`).
     */
    resend(eventId: string, only?: string, by = 'operator'): Promise<ResendResult> {
      return asOperator('resend', by, (span) => resend(eventId, only, by, span));
    },
  };

  async function resend(
    eventId: string,
    only: string | undefined,
    by: string,
    span: OperatorSpan | undefined,
  ): Promise<ResendResult> {
    span?.attribute(SpanAttribute.EventId, eventId);
    const configured = pipeline.targets();
    if (only !== undefined && !configured.some((t) => t.name === only)) throw new UnknownTargetError(only);
    const { body, known } = await findBody(eventId);
    span?.link(body?.trace);
    if (!body)
      throw known
        ? new EventBodyGoneError(eventId, pipeline.options.retention.completed.ageSeconds)
        : new UnknownEventError(eventId);
    const candidates = only !== undefined ? configured.filter((t) => t.name === only) : configured;
    for (const t of candidates) {
      if (only === undefined) continue;
      if (!subscribes(t, body.eventType)) throw new NotSubscribedError(t.name, body.eventType);
      if (!takesEnvironment(t, body.environment))
        throw new NotSubscribedError(t.name, `events of the ${body.environment} environment`);
    }
    // The body as the fan-out's filters saw it: the schemas keep every field, so the parsed raw body is the payload.
    const event: PlannedEvent = { ...body, payload: JSON.parse(decodeRawBody(body).toString('utf8')) };
    const { deliveries, filtered } = planDeliveries(event, candidates);
    const targets: ResendResult['targets'] = [];
    for (const { target } of deliveries)
      targets.push({ target: target.name, outcome: await resendTo(target, event, by) });
    for (const target of filtered) targets.push({ target, outcome: 'filtered' });
    return { eventId, targets };
  }
}

export type Resender = ReturnType<typeof createResender>;
