import type { Job } from 'bullmq';
import type { EventType } from '../model/event-table';
import { isEventId } from '../model/ids';
import type { DeliveryJob, EventJob, QuarantineJob } from '../model/jobs';
import { ownKeys } from '../model/names';
import type { DeliveryQueue, EventQueue, QuarantineQueue } from '../model/queues';
import type { QueueRegistry } from './queue-registry';
import { eventIdsForRequest } from './request-index';

/**
 * An event found by its id: a job that holds it. One of its delivery jobs (a routed event has no job
 * of its own), its event job (no target took it), or its quarantine job.
 */
export type FoundEvent =
  | { kind: 'delivery'; queue: DeliveryQueue; job: Job<DeliveryJob, unknown, EventType> }
  | { kind: 'event'; queue: EventQueue; job: Job<EventJob, unknown, EventType> }
  | { kind: 'quarantine'; queue: QuarantineQueue; job: Job<QuarantineJob, unknown, EventType> };

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
  /** A job holding the event (a delivery job first), while the retention settings keep one. */
  findEvent(eventId: string): Promise<FoundEvent | undefined>;
  /** Whether the event was received within the de-duplication window, even if no job holds it any more. */
  isKnown(eventId: string): Promise<boolean>;
  eventIdsForRequest(requestId: string): Promise<string[]>;
  /** The event's later copies, counted by the ingest script while its de-duplication record lasts (none counted: zeros). */
  copiesOf(eventId: string): Promise<EventCopies>;
}

export function createEventLookup(queues: Pick<QueueRegistry, 'redis' | 'prefix' | 'options' | 'eventQueues' | 'quarantine' | 'deliveryQueues'>): EventLookup {
  const { redis, prefix, quarantine } = queues;
  return {
    async findEvent(eventId) {
      if (!isEventId(eventId)) return undefined;
      for (const [, queue] of queues.deliveryQueues()) {
        const job = await queue.getJob(eventId);
        if (job) return { kind: 'delivery', queue, job };
      }
      for (const queue of queues.eventQueues()) {
        // An event no target took is its own job, its id the event id.
        const job = await queue.getJob(eventId);
        if (job) return { kind: 'event', queue, job };
      }
      const job = await jobByDeduplicationId(quarantine, eventId);
      return job ? { kind: 'quarantine', queue: quarantine, job } : undefined;
    },
    async isKnown(eventId) {
      if ((await redis.exists(ownKeys.dedup(prefix, eventId))) > 0) return true;
      // A quarantined notification is known through BullMQ's de-duplication in the quarantine queue.
      return Boolean(await quarantine.getDeduplicationJobId(eventId));
    },
    eventIdsForRequest: (requestId) => eventIdsForRequest(redis, prefix, requestId, queues.options.dedupWindowMs),
    async copiesOf(eventId) {
      const [duplicates, replays, lastAt] = await redis.hmget(ownKeys.copies(prefix, eventId), 'duplicates', 'replays', 'lastAt');
      return { duplicates: Number(duplicates ?? 0), replays: Number(replays ?? 0), ...(lastAt ? { lastAt: new Date(Number(lastAt)).toISOString() } : {}) };
    },
  };
}

interface DeduplicatingQueue<J> {
  getDeduplicationJobId(id: string): Promise<string | null>;
  getJob(id: string): Promise<J | undefined>;
}

async function jobByDeduplicationId<J>(queue: DeduplicatingQueue<J>, eventId: string): Promise<J | undefined> {
  const jobId = await queue.getDeduplicationJobId(eventId);
  return jobId ? ((await queue.getJob(jobId)) ?? undefined) : undefined;
}
