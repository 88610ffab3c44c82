import type { Job } from 'bullmq';
import type { EventType } from '../model/event-table';
import { isEventId } from '../model/ids';
import type { DeliveryJob, EventJob, QuarantineJob } from '../model/jobs';
import { ownKeys } from '../model/names';
import type { DeliveryQueue, EventQueue, QuarantineQueue } from '../model/queues';
import { UnreadableEventError, type UnreadableJob } from './errors';
import type { PipelineObserver } from './producer';
import type { QueueRegistry } from './queue-registry';
import { eventIdsForRequest } from './request-index';

export type { UnreadableJob } from './errors';

/**
 * An event found by its id: a job that holds it. One of its delivery jobs (a routed event has no job
 * of its own), its event job (no target took it), or its quarantine job.
 */
export type FoundEvent =
  | { kind: 'delivery'; queue: DeliveryQueue; job: Job<DeliveryJob, unknown, EventType> }
  | { kind: 'event'; queue: EventQueue; job: Job<EventJob, unknown, EventType> }
  | { kind: 'quarantine'; queue: QuarantineQueue; job: Job<QuarantineJob, unknown, EventType> };

/** A delivery job of the event, by target: read, or unreadable (why). */
export type EventDelivery =
  | { target: string; queue: DeliveryQueue; job: Job<DeliveryJob, unknown, EventType> }
  | { target: string; queue: DeliveryQueue; unreadable: string };

/**
 * How many copies of a notification arrived after the first: `duplicates`, the same event under a new
 * nonce (a platform retry, answered 200 and not queued again), and `replays`, a replay key accepted
 * before carrying this same event (refused as a replay); `lastAt`, when the last of them arrived.
 */
export interface EventCopies {
  duplicates: number;
  replays: number;
  lastAt?: string;
}

/** Finding events in the queues: by event id, by the platform's request id, and whether one is known at all. */
export interface EventLookup {
  /**
   * A readable job holding the event (a delivery job first), while the retention settings keep one.
   * Throws UnreadableEventError (409) when jobs hold it but none can be read.
   */
  findEvent(eventId: string): Promise<FoundEvent | undefined>;
  /** The event's delivery jobs, one per target that has one; one that cannot be read is answered as such. */
  deliveriesOf(eventId: string): Promise<EventDelivery[]>;
  /** Whether the event was received within the de-duplication window, even if no job holds it any more. */
  isKnown(eventId: string): Promise<boolean>;
  eventIdsForRequest(requestId: string): Promise<string[]>;
  /**
   * The event's later copies, counted by the ingest script while its de-duplication record lasts (none counted: zeros).
   */
  copiesOf(eventId: string): Promise<EventCopies>;
}

export function createEventLookup(
  queues: Pick<QueueRegistry, 'redis' | 'prefix' | 'options' | 'eventQueues' | 'quarantine' | 'deliveryQueues'>,
  observer: Pick<PipelineObserver, 'unreadableJob'> = {},
): EventLookup {
  const { redis, prefix, quarantine } = queues;

  /**
   * A job of an event, or why it cannot be read: BullMQ parses the stored data and options as it
   * reads a job (nothing else in it throws SyntaxError), and the views read the fields checked here.
   * One bad job is reported and passed over, so it hides nothing else of the event; a Redis error
   * is no property of the job and still fails the call.
   */
  async function read<J extends Job>(
    queue: { name: string; getJob(id: string): Promise<J | undefined> },
    id: string,
  ): Promise<J | UnreadableJob | undefined> {
    let job: J | undefined;
    let reason: string | undefined;
    try {
      job = await queue.getJob(id);
      reason = job && notAnEventJob(job.data);
    } catch (err) {
      if (!(err instanceof SyntaxError)) throw err;
      reason = `its stored job is not JSON: ${err.message}`;
    }
    if (reason === undefined) return job;
    const unreadable = { queue: queue.name, id, reason };
    observer.unreadableJob?.(unreadable);
    return unreadable;
  }

  return {
    async findEvent(eventId) {
      if (!isEventId(eventId)) return undefined;
      const unreadable: UnreadableJob[] = [];
      const readable = <J>(job: J | UnreadableJob | undefined): J | undefined => {
        if (job === undefined || !isUnreadable(job)) return job;
        unreadable.push(job);
        return undefined;
      };
      for (const [, queue] of queues.deliveryQueues()) {
        const job = readable(await read(queue, eventId));
        if (job) return { kind: 'delivery', queue, job };
      }
      for (const queue of queues.eventQueues()) {
        // An event no target took is its own job, its id the event id.
        const job = readable(await read(queue, eventId));
        if (job) return { kind: 'event', queue, job };
      }
      const quarantineId = await quarantine.getDeduplicationJobId(eventId);
      const job = quarantineId ? readable(await read(quarantine, quarantineId)) : undefined;
      if (job) return { kind: 'quarantine', queue: quarantine, job };
      if (unreadable.length) throw new UnreadableEventError(eventId, unreadable);
      return undefined;
    },
    async deliveriesOf(eventId) {
      if (!isEventId(eventId)) return [];
      const found = await Promise.all(
        queues.deliveryQueues().map(async ([target, queue]): Promise<EventDelivery | undefined> => {
          const job = await read(queue, eventId);
          if (job === undefined) return undefined;
          return isUnreadable(job) ? { target, queue, unreadable: job.reason } : { target, queue, job };
        }),
      );
      return found.filter((d) => d !== undefined);
    },
    async isKnown(eventId) {
      if ((await redis.exists(ownKeys.dedup(prefix, eventId))) > 0) return true;
      // A quarantined notification is known through BullMQ's de-duplication in the quarantine queue.
      return Boolean(await quarantine.getDeduplicationJobId(eventId));
    },
    eventIdsForRequest: (requestId) => eventIdsForRequest(redis, prefix, requestId, queues.options.dedupWindowMs),
    async copiesOf(eventId) {
      const [duplicates, replays, lastAt] = await redis.hmget(
        ownKeys.copies(prefix, eventId),
        'duplicates',
        'replays',
        'lastAt',
      );
      return {
        duplicates: Number(duplicates ?? 0),
        replays: Number(replays ?? 0),
        ...(lastAt ? { lastAt: new Date(Number(lastAt)).toISOString() } : {}),
      };
    },
  };
}

function isUnreadable<J>(job: J | UnreadableJob): job is UnreadableJob {
  return typeof job === 'object' && job !== null && 'reason' in job && !('data' in job);
}

/** The fields every event view reads of an event, quarantine or delivery job. */
const VIEWED_FIELDS = {
  eventId: 'string',
  eventType: 'string',
  receivedAt: 'string',
  path: 'string',
  signatureHeaders: 'object',
} as const;

function notAnEventJob(data: unknown): string | undefined {
  if (typeof data !== 'object' || data === null)
    return `its data is not an event's job: ${data === null ? 'null' : typeof data}`;
  const fields = data as Record<string, unknown>;
  const wrong = Object.entries(VIEWED_FIELDS).filter(
    ([name, type]) => typeof fields[name] !== type || fields[name] === null,
  );
  return wrong.length
    ? `its data is not an event's job: ${wrong.map(([name, type]) => `${name} is not a ${type}`).join(', ')}`
    : undefined;
}
