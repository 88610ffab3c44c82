import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { EVENT_TYPES, type EventType } from '../events/table';
import { EnqueueUnavailableError } from './errors';
import { jobIdFor, replayTagOf } from './ids';
import type { EventJob, QuarantineJob } from './job';
import { eventQueueName, QUARANTINE_QUEUE } from './names';
import { withTimeout } from './with-timeout';

/** accepted: newly queued; replay: this exact request was queued before; duplicate: same notification, new nonce. */
export type EnqueueOutcome = 'accepted' | 'replay' | 'duplicate';

export interface IngestOptions {
  /** BullMQ key prefix. @defaultValue `whr` */
  prefix: string;
  /** @defaultValue 3000 */
  enqueueTimeoutMs: number;
  /** How long the same event id is recognised. @defaultValue 7 days */
  dedupWindowMs: number;
  retention: {
    completed: { ageSeconds: number; count: number };
    failed: { ageSeconds: number; count: number };
  };
}

export interface Ingest {
  enqueueEvent(job: EventJob, replayKey: string): Promise<EnqueueOutcome>;
  enqueueQuarantine(job: QuarantineJob, replayKey: string): Promise<EnqueueOutcome>;
  queues: ReadonlyMap<string, Queue>;
  close(): Promise<void>;
}

/**
 * The producer side: one queue per event type plus the quarantine queue, on one shared connection.
 * Each add is one Redis script call that both de-duplicates (by event id) and stores the job, so
 * there is never a recognised-but-unqueued notification.
 */
export function createIngest(connection: Redis, opts: IngestOptions): Ingest {
  const defaultJobOptions: JobsOptions = {
    attempts: 5,
    backoff: { type: 'exponential', delay: 1000 },
    removeOnComplete: { age: opts.retention.completed.ageSeconds, count: opts.retention.completed.count },
    removeOnFail: { age: opts.retention.failed.ageSeconds, count: opts.retention.failed.count },
  };
  const queues = new Map<string, Queue>();
  for (const name of [...EVENT_TYPES.map(eventQueueName), QUARANTINE_QUEUE]) {
    queues.set(name, new Queue(name, { connection, prefix: opts.prefix, defaultJobOptions }));
  }

  async function add(queueName: string, jobName: EventType, data: EventJob | QuarantineJob, replayKey: string) {
    const queue = queues.get(queueName);
    if (!queue) throw new Error(`no queue ${queueName}`);
    const { jobId, replayTag } = jobIdFor(replayKey);
    const adding = queue.add(jobName, data, {
      jobId,
      deduplication: { id: data.eventId, ttl: opts.dedupWindowMs },
    });
    let job;
    try {
      job = await withTimeout(adding, opts.enqueueTimeoutMs, () => new EnqueueUnavailableError(`Redis did not confirm within ${opts.enqueueTimeoutMs} ms`));
    } catch (err) {
      adding.catch(() => undefined); // a late failure of the abandoned add has nobody left to tell
      if (err instanceof EnqueueUnavailableError) throw err;
      throw new EnqueueUnavailableError(`Redis refused the job: ${(err as Error).message}`, { cause: err });
    }
    if (job.id === jobId) return 'accepted';
    return replayTagOf(job.id ?? '') === replayTag ? 'replay' : 'duplicate';
  }

  return {
    queues,
    enqueueEvent: (job, replayKey) => add(eventQueueName(job.eventType), job.eventType, job, replayKey),
    enqueueQuarantine: (job, replayKey) => add(QUARANTINE_QUEUE, job.eventType, job, replayKey),
    async close() {
      await Promise.all([...queues.values()].map((q) => q.close()));
    },
  };
}
