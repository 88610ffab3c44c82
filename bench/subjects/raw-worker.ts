/**
 * The delivery baseline: one plain BullMQ worker per event queue that POSTs each job to the sink with
 * undici, and nothing else (no fan-out hop, no logging, no metrics, no retries policy of its own). Used
 * in-process by the baseline server, or run as its own process for the drain (started by drain.ts).
 */
import { Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { Agent, request } from 'undici';
import { EVENT_TYPES } from '../../src/model/event-table';
import { keyPrefix } from '../../src/model/names';
import type { EventJob } from '../../src/model/jobs';

export interface RawWorkerOptions {
  redisUrl: string;
  prefix: string;
  sinkUrl: string;
  /** Jobs in flight per event queue. */
  concurrency: number;
}

export interface RunningRawWorker {
  close(): Promise<void>;
}

export function startRawWorker(opts: RawWorkerOptions): RunningRawWorker {
  // Workers block on Redis, so they retry forever rather than fail a command (as BullMQ requires).
  const connection = new Redis(opts.redisUrl, { maxRetriesPerRequest: null });
  const dispatcher = new Agent({ connections: opts.concurrency * EVENT_TYPES.length, keepAliveTimeout: 30_000 });

  const deliver = async (job: Job<EventJob>): Promise<void> => {
    const { eventId, eventType, receivedAt, rawBody } = job.data;
    // The same Standard Webhooks body the service sends, with the platform's bytes spliced in as data.
    const body = `{"id":${JSON.stringify(eventId)},"type":${JSON.stringify(eventType)},"timestamp":${JSON.stringify(receivedAt)},"data":${rawBody}}`;
    const res = await request(opts.sinkUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'webhook-id': eventId },
      body,
      dispatcher,
    });
    await res.body.dump();
    if (res.statusCode < 200 || res.statusCode >= 300) throw new Error(`sink answered ${res.statusCode}`);
  };

  const workers = EVENT_TYPES.map(
    (type) =>
      // The baseline producer's queues (baseline-producer.ts), one per event type, named by the type.
      new Worker<EventJob>(type, deliver, {
        connection,
        prefix: opts.prefix,
        concurrency: opts.concurrency,
        // The service's jobs name a custom backoff type; a plain fixed delay serves any retry here.
        settings: { backoffStrategy: () => 1000 },
      }),
  );
  for (const w of workers) w.on('error', (err) => process.stderr.write(`raw worker: ${err.message}\n`));

  return {
    async close() {
      await Promise.all(workers.map((w) => w.close()));
      await dispatcher.close();
      connection.disconnect();
    },
  };
}

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
}

if (require.main === module) {
  const running = startRawWorker({
    redisUrl: required('REDIS_URL'),
    prefix: keyPrefix(required('QUEUE_PREFIX')),
    sinkUrl: required('SINK_URL'),
    concurrency: Number(required('RAW_CONCURRENCY')),
  });
  process.send?.({ type: 'ready' });
  process.on('SIGTERM', () => {
    running.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
