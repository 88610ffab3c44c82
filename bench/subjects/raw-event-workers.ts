import { Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { EVENT_TYPES } from '../../src/model/event-table';
import { keyPrefix } from '../../src/model/names';
import type { EventJob } from '../../src/model/jobs';

/** An environment variable the raw drainer cannot run without. */
export function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
}

/**
 * Consumes the baseline producer's queues (baseline-producer.ts: one per event type, named by the type)
 * with plain BullMQ workers calling `deliver`, tells the parent it is ready, and on SIGTERM closes the
 * workers, then `close`, then exits. `name` prefixes its error lines.
 */
export function runRawEventWorkers(
  name: string,
  deliver: (job: Job<EventJob>) => Promise<void>,
  close: () => Promise<void>,
): void {
  const connection = new Redis(required('REDIS_URL'), { maxRetriesPerRequest: null });
  const workers = EVENT_TYPES.map(
    (type) =>
      new Worker<EventJob>(type, deliver, {
        connection,
        prefix: keyPrefix(required('QUEUE_PREFIX')),
        concurrency: Number(required('RAW_CONCURRENCY')),
        settings: { backoffStrategy: () => 1000 },
      }),
  );
  for (const w of workers) w.on('error', (err) => process.stderr.write(`${name}: ${err.message}\n`));
  process.send?.({ type: 'ready' });
  process.on('SIGTERM', () => {
    Promise.all(workers.map((w) => w.close()))
      .then(close)
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  });
}

/** The Standard Webhooks body the service sends for a job, with the platform's bytes spliced in as data. */
export function standardBody(job: EventJob, withEnvironment = false): string {
  const { eventId, eventType, receivedAt, rawBody, environment } = job;
  const env = withEnvironment && environment ? `"environment":${JSON.stringify(environment)},` : '';
  return `{"id":${JSON.stringify(eventId)},"type":${JSON.stringify(eventType)},"timestamp":${JSON.stringify(receivedAt)},${env}"data":${rawBody}}`;
}
