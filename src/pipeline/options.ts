import type { Config } from '../config/schema';
import { keyPrefix } from '../model/names';
import type { Retention } from '../model/job-options';
import type { Target } from '../model/target-schema';

export interface PipelineOptions {
  /** Key prefix of every queue and of our own keys. @defaultValue `whr` */
  prefix: string;
  /** How long an add may take before the notification is answered 503. @defaultValue 3000 */
  enqueueTimeoutMs: number;
  /** How long the same event id is recognised (and the request-id index kept). @defaultValue 7 days */
  dedupWindowMs: number;
  retention: Retention;
  /** How long an accepted replay key (nonce, legacy signature) is remembered: twice the timestamp tolerance. */
  replayTtlMs: number;
  /** Replicas that must confirm each ingest write (WAIT) before it is acknowledged. @defaultValue 0 */
  minReplicasAck: number;
  /** Whether acknowledged notifications are appended to the archive stream (ARCHIVE_URL set). @defaultValue false */
  archive?: boolean;
  /** The targets at start, each with a delivery queue (QueueRegistry.setTargets changes them later). */
  targets: readonly Target[];
}

export function pipelineOptions(config: Config): PipelineOptions {
  return {
    prefix: keyPrefix(config.queuePrefix),
    enqueueTimeoutMs: config.enqueueTimeoutMs,
    dedupWindowMs: config.dedupWindowMs,
    retention: config.retention,
    replayTtlMs: 2 * config.timestampToleranceMs,
    minReplicasAck: config.redisMinReplicasAck,
    targets: config.targets,
    archive: config.archive.url !== undefined,
  };
}
