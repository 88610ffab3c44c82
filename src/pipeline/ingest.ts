import type { JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { EventType } from '../events/table';
import { whenReady } from './connection';
import { EnqueueUnavailableError } from './errors';
import { jobIdFor, replayTagOf } from './ids';
import type { EventJob, QuarantineJob } from './jobs';
import { ownKeys } from './names';
import type { EventQueue, QuarantineQueue } from './queues';
import { withTimeout } from './with-timeout';

/** accepted: newly queued; replay: this exact request was queued before; duplicate: same notification, new nonce. */
export type EnqueueOutcome = 'accepted' | 'replay' | 'duplicate';

export interface IngestSettings {
  prefix: string;
  /** @defaultValue 3000 */
  enqueueTimeoutMs: number;
  /** How long the same event id is recognised. @defaultValue 7 days */
  dedupWindowMs: number;
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
}

/**
 * The producer side. Each add is one Redis script call that both de-duplicates (by event id) and
 * stores the job, so there is never a recognised-but-unqueued notification; every call is bounded
 * by `enqueueTimeoutMs` and fails with EnqueueUnavailableError, so nothing is acknowledged unstored.
 */
export function createIngest(
  connection: Redis,
  settings: IngestSettings,
  queues: { event(type: EventType): EventQueue; quarantine: QuarantineQueue },
): Ingest {
  // BullMQ answers an add it de-duplicated with the earlier job, whose id tells a replay from a duplicate.
  async function outcome(adding: Promise<{ id?: string }>, jobId: string, replayTag: string): Promise<EnqueueOutcome> {
    const job = await bounded(adding);
    if (job.id === jobId) return 'accepted';
    return replayTagOf(job.id ?? '') === replayTag ? 'replay' : 'duplicate';
  }
  const addOptions = (jobId: string, eventId: string): JobsOptions => ({ jobId, deduplication: { id: eventId, ttl: settings.dedupWindowMs } });

  function bounded<T>(promise: Promise<T>): Promise<T> {
    const ms = settings.enqueueTimeoutMs;
    return withTimeout(promise, ms, () => new EnqueueUnavailableError(`Redis did not confirm within ${ms} ms`)).catch((err: Error) => {
      promise.catch(() => undefined);
      throw err instanceof EnqueueUnavailableError ? err : new EnqueueUnavailableError(`Redis refused: ${err.message}`, { cause: err });
    });
  }

  return {
    async bindLegacySignature(replayKey, eventType) {
      const key = ownKeys.legacySignature(settings.prefix, replayKey);
      const binding = whenReady(connection).then(() => connection.eval(BIND_LEGACY_SIGNATURE, 1, key, eventType, String(settings.legacyBindingTtlMs)));
      const bound = await bounded(binding);
      return bound === 1;
    },
    enqueueEvent(job, replayKey) {
      const { jobId, replayTag } = jobIdFor(replayKey);
      return outcome(queues.event(job.eventType).add(job.eventType, job, addOptions(jobId, job.eventId)), jobId, replayTag);
    },
    enqueueQuarantine(job, replayKey) {
      const { jobId, replayTag } = jobIdFor(replayKey);
      return outcome(queues.quarantine.add(job.eventType, job, addOptions(jobId, job.eventId)), jobId, replayTag);
    },
  };
}
