import type { Job } from 'bullmq';
import { markSeriesStart } from '../forwarding/delivery-story';
import type { EventType } from '../model/event-table';
import type { DeliveryFailure, DeliveryJob } from '../model/jobs';
import type { QueueRegistry } from '../pipeline/queue-registry';
import type { RecordDeliveryEnd } from '../pipeline/archive-outcome';
import type { DeliveryQueue } from '../model/queues';
import { isEventId } from '../model/ids';
import { ServiceError } from '../model/errors';
import { asOperator } from '../tracing/tracing';
import { SpanAttribute } from '../tracing/attributes';

export interface DeadLetter {
  /** `<target>/<job id>`: what replay takes. */
  id: string;
  target: string;
  eventId: string;
  eventType: string;
  receivedAt: string;
  failedAt?: string;
  attempts: number;
  reason: string;
  lastFailure?: DeliveryFailure;
  /**
   * The job could not be read (its stored data is not a delivery job): shown, so an operator can remove it, and
   * skipped.
   */
  unreadable?: true;
}

export interface DeadLetterFilter {
  target?: string;
  eventType?: string;
  /** Failed at or after (ISO time or epoch ms). */
  from?: number;
  /** Failed at or before. */
  to?: number;
  /** @defaultValue 100 */
  limit?: number;
}

const PAGE = 1000;

/**
 * Dead letters are the failed jobs of the delivery queues (failed jobs there are never removed
 * automatically). Replaying one retries the same job, so the event keeps its `webhook-id`, with a
 * fresh set of attempts.
 */
export function createDeadLetters(
  pipeline: Pick<QueueRegistry, 'deliveryQueue' | 'deliveryQueues' | 'ordering'> & {
    recordDeliveryEnd?: RecordDeliveryEnd;
  },
) {
  function selectedQueues(target?: string): [string, DeliveryQueue][] {
    if (target === undefined) return pipeline.deliveryQueues();
    const queue = pipeline.deliveryQueue(target);
    if (!queue) throw new UnknownTargetError(target);
    return [[target, queue]];
  }

  async function list(filter: DeadLetterFilter = {}): Promise<DeadLetter[]> {
    const limit = filter.limit ?? 100;
    const out: DeadLetter[] = [];
    for (const [target, queue] of selectedQueues(filter.target)) {
      for await (const job of failedJobs(queue)) {
        if ('unreadable' in job) {
          if (filter.eventType || filter.from !== undefined || filter.to !== undefined) continue;
          out.push(unreadableOf(target, job));
          if (out.length >= limit) return out;
          continue;
        }
        const failedAt = job.finishedOn;
        if (filter.eventType && job.data.eventType !== filter.eventType) continue;
        if (filter.from !== undefined && (failedAt ?? 0) < filter.from) continue;
        if (filter.to !== undefined && (failedAt ?? Infinity) > filter.to) continue;
        out.push(deadLetterOf(target, job));
        if (out.length >= limit) return out;
      }
    }
    return out;
  }

  /**
   * Replays the named dead letters; returns the ids replayed and those not found (or no longer failed).
   * `by`, the operator, marks the new attempt series in each delivery's story.
   */
  async function replay(ids: readonly string[], by = 'operator'): Promise<{ replayed: string[]; notFound: string[] }> {
    // While tracing is on, the replay is a span of its own, linked to the trace each delivery was
    // received in; the new attempts join that trace (each job keeps its `traceparent`).
    return asOperator('replay', by, async (span) => {
      const result = await replayEach(ids, by, (trace) => span?.link(trace));
      span?.attribute(SpanAttribute.Replayed, result.replayed.length);
      return result;
    });
  }

  async function replayEach(
    ids: readonly string[],
    by: string,
    linkTrace: (trace: string | undefined) => void,
  ): Promise<{ replayed: string[]; notFound: string[] }> {
    const replayed: string[] = [];
    const notFound: string[] = [];
    for (const id of ids) {
      const slash = id.indexOf('/');
      const queue = slash > 0 ? pipeline.deliveryQueue(id.slice(0, slash)) : undefined;
      const jobId = id.slice(slash + 1);
      const job = queue && isEventId(jobId) ? await queue.getJob(jobId) : undefined;
      if (!job || !(await job.isFailed())) {
        notFound.push(id);
        continue;
      }
      linkTrace(job.data.trace);
      await markSeriesStart(job, 'replay', by);
      await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
      replayed.push(id);
    }
    return { replayed, notFound };
  }

  /** Replays every dead letter matching the filter (all of them when it is empty). */
  async function replayMatching(
    filter: Omit<DeadLetterFilter, 'limit'>,
    by = 'operator',
  ): Promise<{ replayed: string[]; notFound: string[] }> {
    const matching = await list({ ...filter, limit: Number.MAX_SAFE_INTEGER });
    return replay(
      matching.map((d) => d.id),
      by,
    );
  }

  /**
   * Removes one dead letter for good: the delivery will not be attempted again (a resend could still
   * give the target a new one). Only a failed job is removed; one waiting, delayed, in flight or
   * delivered is no dead letter. A replay racing this call can still lose its job between the state
   * check and the removal: BullMQ removes a job by id, whatever its state. For an ordered target, the
   * next delivery of the key goes at once when the discarded one held it back.
   */
  async function discard(target: string, eventId: string): Promise<DeadLetter> {
    const queue = pipeline.deliveryQueue(target);
    if (!queue) throw new UnknownTargetError(target);
    const job = isEventId(eventId) ? await queue.getJob(eventId) : undefined;
    if (!job) throw new DeadLetterNotFoundError(`${target}/${eventId}`);
    const state = await job.getState();
    if (state !== 'failed') throw new NotDeadLetterError(`${target}/${eventId}`, state);
    await job.remove();
    await pipeline.recordDeliveryEnd?.({ eventId, target, state: 'discarded', attempts: job.attemptsMade });
    // If this fails, the delivery behind finds the head gone when it next wakes, and goes then.
    await pipeline
      .ordering(target)
      ?.discarded(job)
      .catch(() => undefined);
    return deadLetterOf(target, job);
  }

  return { list, replay, replayMatching, discard };
}

function deadLetterOf(target: string, job: Job<DeliveryJob, unknown, EventType>): DeadLetter {
  return {
    id: `${target}/${job.id}`,
    target,
    eventId: job.data.eventId,
    eventType: job.data.eventType,
    receivedAt: job.data.receivedAt,
    failedAt: job.finishedOn ? new Date(job.finishedOn).toISOString() : undefined,
    attempts: job.attemptsMade,
    reason: job.failedReason,
    lastFailure: job.data.lastFailure,
  };
}

function unreadableOf(target: string, { id, unreadable }: Unreadable): DeadLetter {
  return {
    id: `${target}/${id}`,
    target,
    eventId: '',
    eventType: '',
    receivedAt: '',
    attempts: 0,
    reason: `unreadable job: ${unreadable}`,
    unreadable: true,
  };
}

interface Unreadable {
  id: string;
  unreadable: string;
}

/**
 * Every failed job of a queue, a page at a time, so no dead letter is out of reach however many there
 * are. Each job is read on its own: one whose stored data is not a delivery job (not JSON, or without
 * an event id) is reported as unreadable instead of failing the whole listing.
 */
async function* failedJobs(queue: DeliveryQueue): AsyncGenerator<Job<DeliveryJob, unknown, EventType> | Unreadable> {
  for (let start = 0; ; start += PAGE) {
    const ids = await queue.getRanges(['failed'], start, start + PAGE - 1);
    const page = await Promise.all(
      ids.map((id) =>
        queue.getJob(id).then(
          (job): Job<DeliveryJob, unknown, EventType> | Unreadable | undefined =>
            job === undefined || isDeliveryJob(job.data) ? job : { id, unreadable: 'its data is not a delivery job' },
          (err: Error): Unreadable => ({ id, unreadable: err.message }),
        ),
      ),
    );
    // BullMQ answers undefined for a job removed between the listing and the read.
    for (const job of page) if (job) yield job;
    if (ids.length < PAGE) return;
  }
}

function isDeliveryJob(data: unknown): data is DeliveryJob {
  return typeof data === 'object' && data !== null && typeof (data as { eventId?: unknown }).eventId === 'string';
}

export type DeadLetters = ReturnType<typeof createDeadLetters>;

export class UnknownTargetError extends ServiceError {
  readonly code = 'unknown_target';
  readonly status = 404;
  constructor(readonly target: string) {
    super(`no target named "${target}"`);
  }
}

/** The target has no delivery of that event. 404. */
export class DeadLetterNotFoundError extends ServiceError {
  readonly code = 'not_found';
  readonly status = 404;
  constructor(readonly id: string) {
    super(`no dead letter ${id}`);
  }
}

/** The delivery exists but has not failed (waiting, delayed, in flight or delivered), so it is no dead letter. 409. */
export class NotDeadLetterError extends ServiceError {
  readonly code = 'not_failed';
  readonly status = 409;
  constructor(
    readonly id: string,
    readonly state: string,
  ) {
    super(`${id} is not a dead letter: its delivery is ${state}`);
  }
  override answer() {
    return { ...super.answer(), state: this.state };
  }
}
