/**
 * The AMQP delivery baseline: one plain BullMQ worker per event queue that publishes each job to
 * RabbitMQ on one confirm channel (persistent, mandatory, waiting for the broker's confirm), and
 * nothing else: no signing, no logging, no metrics, no retry policy of its own. Run as its own
 * process for the amqp phase (bench/phases/amqp.ts), beside the service's delivery worker.
 */
import type { Job } from 'bullmq';
import { connect } from 'amqplib';
import type { EventJob } from '../../src/model/jobs';
import { required, runRawEventWorkers, standardBody } from './raw-event-workers';

async function main(): Promise<void> {
  const exchange = required('AMQP_EXCHANGE');
  const model = await connect(required('AMQP_URL'));
  const channel = await model.createConfirmChannel();

  const deliver = (job: Job<EventJob>): Promise<void> => {
    const { eventId, eventType } = job.data;
    const body = standardBody(job.data);
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
  runRawEventWorkers('raw amqp worker', deliver, () => model.close());
}

main().catch((err: Error) => {
  process.stderr.write(`raw amqp worker failed: ${err.message}\n`);
  process.exit(1);
});
