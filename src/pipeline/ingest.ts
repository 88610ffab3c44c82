import type { Queue } from 'bullmq';
import type { RedisClient } from '../redis/connect';
import type { EventType } from '../events/table';
import { EnqueueUnavailableError } from './errors';
import { jobIdFor } from './ids';
import { defineIngestScript, type ReplicaConfirmation } from './ingest-script';
import type { EventJob, QuarantineJob } from './jobs';
import { ownKeys } from './names';
import type { EventQueue, QuarantineQueue } from './queues';
import { withTimeout } from './with-timeout';

/**
 * accepted: newly queued; replay: its replay key (nonce, or legacy signature) was accepted before;
 * duplicate: the same notification under a new replay key; signature_reused: a legacy signature
 * already accepted for another event type.
 */
export type EnqueueOutcome = 'accepted' | 'replay' | 'duplicate' | 'signature_reused';

const WAIT_MARGIN_MS = 250;

export interface IngestSettings {
  prefix: string;
  /** @defaultValue 3000 */
  enqueueTimeoutMs: number;
  /** How long the same event id is recognised. @defaultValue 7 days */
  dedupWindowMs: number;
  /**
   * How long an accepted replay key is remembered: twice the timestamp tolerance, beyond which the
   * verifier refuses the request's timestamp anyway.
   */
  replayTtlMs: number;
  /**
   * Replicas that must confirm a write (WAIT) before it is acknowledged; fewer within the enqueue
   * timeout is a 503. @defaultValue 0
   */
  minReplicasAck: number;
}

export interface Ingest {
  /** One Redis script call: replay check and binding, de-duplication and the add (see ingest-script.ts). */
  enqueueEvent(job: EventJob, replayKey: string): Promise<EnqueueOutcome>;
  enqueueQuarantine(job: QuarantineJob, replayKey: string): Promise<EnqueueOutcome>;
}

/**
 * The producer side. Each notification is one Redis script call that checks and binds its replay
 * key, de-duplicates (by event id) and stores the job, so there is never a recognised-but-unqueued
 * notification and no window between the replay decision and the add; every call is bounded by
 * `enqueueTimeoutMs` and fails with EnqueueUnavailableError, so nothing is acknowledged unstored.
 */
export function createIngest(
  connection: RedisClient,
  settings: IngestSettings,
  queues: { event(type: EventType): EventQueue; quarantine: QuarantineQueue },
): Ingest {
  const ingest = defineIngestScript(connection);

  async function add<D extends EventJob | QuarantineJob, R>(queue: Queue<D, R, EventType>, data: D, replayKey: string): Promise<EnqueueOutcome> {
    const jobId = jobIdFor(replayKey);
    const binding = {
      key: ownKeys.replay(settings.prefix, data.scheme, replayKey),
      value: data.eventType,
      ttlMs: settings.replayTtlMs,
      // The v1.2 string to sign has no path: one legacy signature would verify on all seven notify
      // paths, so it serves the first event type it arrived for only.
      exclusive: data.scheme === 'legacy',
    };
    const job = { name: data.eventType, data, opts: { jobId, deduplication: { id: data.eventId, ttl: settings.dedupWindowMs } } };
    // As queue.add does: wait for the queue's start-up only; afterwards a command while Redis is
    // down fails at once (no offline queue) instead of waiting, holding the body, to run late.
    const deadline = Date.now() + settings.enqueueTimeoutMs;
    const decision = await bounded(queue.waitUntilReady().then(() => ingest(queue, job, binding, confirmation(deadline))));
    if (decision.kind !== 'signature_reused') confirmReplicated(decision.replicas);
    if (decision.kind !== 'added') return decision.kind;
    return decision.jobId === jobId ? 'accepted' : 'duplicate';
  }

  /**
   * Acknowledging a write only the master holds would lose it if the master died before passing it
   * on, so with minReplicasAck ≥ 1 the replicas must confirm it (WAIT) within what is left of the
   * enqueue timeout. WAIT gives up before the overall bound, so a shortfall is reported as one, not
   * as a timeout: Redis checks a blocked client's timeout when its loop wakes (every 100 ms at hz 10).
   */
  function confirmation(deadline: number): ReplicaConfirmation | undefined {
    if (settings.minReplicasAck === 0) return undefined;
    const margin = Math.min(WAIT_MARGIN_MS, settings.enqueueTimeoutMs / 4);
    return { replicas: settings.minReplicasAck, timeoutMs: deadline - Date.now() - margin, markerKey: ownKeys.replicaMarker(settings.prefix) };
  }

  function confirmReplicated(replicas: number | undefined): void {
    if (settings.minReplicasAck === 0 || (replicas ?? 0) >= settings.minReplicasAck) return;
    throw new EnqueueUnavailableError(`only ${replicas ?? 0} of ${settings.minReplicasAck} replicas confirmed the write within ${settings.enqueueTimeoutMs} ms`, { reason: 'replicas' });
  }

  function bounded<T>(promise: Promise<T>): Promise<T> {
    const ms = settings.enqueueTimeoutMs;
    return withTimeout(promise, ms, () => new EnqueueUnavailableError(`Redis did not confirm within ${ms} ms`)).catch((err: Error) => {
      promise.catch(() => undefined);
      throw err instanceof EnqueueUnavailableError ? err : new EnqueueUnavailableError(`Redis refused: ${err.message}`, { cause: err });
    });
  }

  return {
    enqueueEvent: (job, replayKey) => add(queues.event(job.eventType), job, replayKey),
    enqueueQuarantine: (job, replayKey) => add(queues.quarantine, job, replayKey),
  };
}
