import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { EVENT_TYPES, type EventType } from '../events/table';
import { EnqueueUnavailableError } from './errors';
import { jobIdFor, replayTagOf } from './ids';
import type { EventJob, QuarantineJob } from './job';
import { eventQueueName, QUARANTINE_QUEUE } from './names';
import { withTimeout } from './with-timeout';

/** Attempts of the fan-out step; with its backoff capped at a minute, about a day of retrying. */
export const FANOUT_ATTEMPTS = 1500;

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
  };
  /** How long a legacy signature stays bound to its event type: twice the timestamp tolerance. */
  legacyBindingTtlMs: number;
}

const BIND_LEGACY_SIGNATURE = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
if redis.call('GET', KEYS[1]) == ARGV[1] then return 1 end
return 0`;

export interface Ingest {
  /**
   * The v1.2 string to sign has no path, so one legacy signature would verify on all seven notify
   * paths. This binds a legacy signature to the first event type it arrived for (for twice the
   * timestamp tolerance); false means it was already used for another type.
   */
  bindLegacySignature(replayKey: string, eventType: EventType): Promise<boolean>;
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
/** Queues re-emit their connection's errors; the connection's own listener already logs them. */
export function ignoreConnectionError(): void {}

/** Resolves once the connection is ready (BullMQ waits like this itself; raw commands must too). */
function whenReady(connection: Redis): Promise<void> {
  if (connection.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => connection.once('ready', () => resolve()));
}

export function createIngest(connection: Redis, opts: IngestOptions): Ingest {
  const defaultJobOptions: JobsOptions = {
    // The fan-out step only writes to Redis; it retries for about a day (capped backoff in the
    // worker) and a job that still fails is kept, never removed, so no acknowledged event vanishes.
    attempts: FANOUT_ATTEMPTS,
    backoff: { type: 'fanout' },
    removeOnComplete: { age: opts.retention.completed.ageSeconds, count: opts.retention.completed.count },
    removeOnFail: false,
  };
  const queues = new Map<string, Queue>();
  for (const name of [...EVENT_TYPES.map(eventQueueName), QUARANTINE_QUEUE]) {
    const queue = new Queue(name, { connection, prefix: opts.prefix, defaultJobOptions });
    queue.on('error', ignoreConnectionError);
    queues.set(name, queue);
  }

  async function add(queueName: string, jobName: EventType, data: EventJob | QuarantineJob, replayKey: string) {
    const queue = queues.get(queueName);
    if (!queue) throw new Error(`no queue ${queueName}`);
    const { jobId, replayTag } = jobIdFor(replayKey);
    const adding = queue.add(jobName, data, {
      jobId,
      deduplication: { id: data.eventId, ttl: opts.dedupWindowMs },
    });
    const job = await bounded(adding);
    if (job.id === jobId) return 'accepted';
    return replayTagOf(job.id ?? '') === replayTag ? 'replay' : 'duplicate';
  }

  function bounded<T>(promise: Promise<T>): Promise<T> {
    return withTimeout(promise, opts.enqueueTimeoutMs, () => new EnqueueUnavailableError(`Redis did not confirm within ${opts.enqueueTimeoutMs} ms`)).catch((err: Error) => {
      promise.catch(() => undefined);
      throw err instanceof EnqueueUnavailableError ? err : new EnqueueUnavailableError(`Redis refused: ${err.message}`, { cause: err });
    });
  }

  return {
    queues,
    async bindLegacySignature(replayKey, eventType) {
      const key = `${opts.prefix}:legacy-signature:${replayKey}`;
      const binding = whenReady(connection).then(() => connection.eval(BIND_LEGACY_SIGNATURE, 1, key, eventType, String(opts.legacyBindingTtlMs)));
      const bound = await bounded(binding);
      return bound === 1;
    },
    enqueueEvent: (job, replayKey) => add(eventQueueName(job.eventType), job.eventType, job, replayKey),
    enqueueQuarantine: (job, replayKey) => add(QUARANTINE_QUEUE, job.eventType, job, replayKey),
    async close() {
      await Promise.all([...queues.values()].map((q) => q.close()));
    },
  };
}
