/**
 * The baselines' own producer: one BullMQ queue per event type on a shared connection, each add one
 * script call with de-duplication. Independent of the service's pipeline (its queues, ids and adds
 * are written here), so a change to how the service stores events cannot move its yardstick; only
 * the job options are the service's, so both store the same bytes.
 */
import { createHash, randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import type { RedisClient } from '../../src/redis/connect';
import { EVENT_TABLE, type EventType } from '../../src/model/event-table';
import { eventJobOptions } from '../../src/model/job-options';
import { buildEventJob, type VerifiedRequest } from './event-job';
import { serviceDefaults } from './service-defaults';

export interface BaselineProducer {
  /** The event type served on a notify path. */
  typeOf(path: string): EventType | undefined;
  add(request: VerifiedRequest): Promise<void>;
  close(): Promise<void>;
}

export function createBaselineProducer(connection: RedisClient, prefix: string): BaselineProducer {
  const defaults = serviceDefaults();
  const defaultJobOptions = eventJobOptions(defaults.retention);
  const queues = new Map<EventType, Queue>(
    EVENT_TABLE.map((e) => [e.type, new Queue(e.type, { connection, prefix, defaultJobOptions })] as const),
  );
  const types = new Map<string, EventType>(EVENT_TABLE.map((e) => [e.path, e.type] as const));
  return {
    typeOf: (path) => types.get(path),
    async add(request) {
      const job = buildEventJob(request);
      // The receiver's job id form: a tag of the nonce (which claims it) and a random part.
      const jobId = `${createHash('sha256').update(request.nonce).digest('hex').slice(0, 16)}-${randomBytes(6).toString('hex')}`;
      await queues
        .get(request.eventType)!
        .add(request.eventType, job, { jobId, deduplication: { id: job.eventId, ttl: defaults.dedupWindowMs } });
    },
    async close() {
      await Promise.all([...queues.values()].map((q) => q.close()));
    },
  };
}
