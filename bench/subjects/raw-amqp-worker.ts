/**
 * The AMQP delivery baseline: one plain BullMQ worker per event queue that publishes each job to
 * RabbitMQ on one confirm channel (persistent, mandatory, waiting for the broker's confirm), and
 * nothing else: no signing, no logging, no metrics, no retry policy of its own. Run as its own
 * process for the amqp phase (bench/phases/amqp.ts), beside the service's delivery worker.
 */
import { Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { connect } from 'amqplib';
import { EVENT_TYPES } from '../../src/model/event-table';
import { keyPrefix } from '../../src/model/names';
import type { EventJob } from '../../src/model/jobs';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
}

async function main(): Promise<void> {
  const exchange = required('AMQP_EXCHANGE');
  const model = await connect(required('AMQP_URL'));
  const channel = await model.createConfirmChannel();
  const connection = new Redis(required('REDIS_URL'), { maxRetriesPerRequest: null });

  const deliver = (job: Job<EventJob>): Promise<void> => {
    const { eventId, eventType, receivedAt, rawBody } = job.data;
    // The same Standard Webhooks body the service publishes, with the platform's bytes spliced in as data.
    const body = `{"id":${JSON.stringify(eventId)},"type":${JSON.stringify(eventType)},"timestamp":${JSON.stringify(receivedAt)},"data":${rawBody}}`;
    return new Promise((resolve, reject) => {
      channel.publish(
        exchange,
        `bench.${eventType}`,
        Buffer.from(body),
        {
          persistent: true,
          mandatory: true,
          messageId: eventId,
          type: eventType,
          contentType: 'application/json',
          headers: { 'webhook-id': eventId },
        },
        (err: unknown) => (err ? reject(new Error('nacked')) : resolve()),
      );
    });
  };

  const workers = EVENT_TYPES.map(
    (type) =>
      // The baseline producer's queues (baseline-producer.ts), one per event type, named by the type.
      new Worker<EventJob>(type, deliver, {
        connection,
        prefix: keyPrefix(required('QUEUE_PREFIX')),
        concurrency: Number(required('RAW_CONCURRENCY')),
        settings: { backoffStrategy: () => 1000 },
      }),
  );
  for (const w of workers) w.on('error', (err) => process.stderr.write(`raw amqp worker: ${err.message}\n`));
  process.send?.({ type: 'ready' });
  process.on('SIGTERM', () => {
    Promise.all(workers.map((w) => w.close()))
      .then(() => model.close())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  });
}

main().catch((err: Error) => {
  process.stderr.write(`raw amqp worker failed: ${err.message}\n`);
  process.exit(1);
});
