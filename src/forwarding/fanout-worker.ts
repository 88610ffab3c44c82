import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { EventType } from '../model/event-table';
import { fanoutBackoff } from './backoff';
import type { EventJob } from '../model/jobs';
import { eventQueueName } from '../model/names';
import type { Producer } from '../pipeline/producer';
import type { QueueRegistry } from '../pipeline/queue-registry';
import type { WorkerDeps } from './delivery-worker';
import type { RoutedFanoutResult } from './fanout-result';
import { subscribes } from '../model/target-schema';

export interface FanoutDeps extends WorkerDeps {
  pipeline: Pick<Producer, 'addDeliveries'> & Pick<QueueRegistry, 'targets'>;
}

/**
 * Routes the events that no target took when they were received (the receiver fans out itself, see
 * pipeline/producer.ts): kept in their type's queue, they are given one delivery job per target they
 * are routed to (subscribed, and its filter matching) once an operator retries them after adding a
 * target; an event that every subscribed target filtered out is completed here with the filtered
 * targets recorded for the event view. The delivery job id is the event id, so a retry after a
 * partial failure gives no target a second delivery.
 */
export function createFanoutWorker(eventType: EventType, deps: FanoutDeps): Worker<EventJob, RoutedFanoutResult> {
  const { pipeline } = deps;
  const processor = async (job: Job<EventJob>): Promise<RoutedFanoutResult> => {
    // Read per job, so targets reloaded at run time take effect without a restart.
    const { deliveries, filtered } = await pipeline.addDeliveries(job.data, pipeline.targets());
    if (deliveries.length === 0 && filtered.length === 0) {
      deps.metrics.unrouted.labels(eventType).inc();
      const { eventId, environment } = job.data;
      if (pipeline.targets().some((t) => subscribes(t, eventType))) {
        deps.logger.warn('event kept: no target takes its environment', { eventId, eventType, environment });
        throw new UnrecoverableError(
          `no target subscribed to ${eventType} takes the ${environment} environment; the event is kept here, retry ` +
            `it once one does`,
        );
      }
      deps.logger.warn('event kept: no target subscribes to its type', { eventId, eventType });
      throw new UnrecoverableError(
        `no target subscribes to ${eventType}; the event is kept here, retry it once one does`,
      );
    }
    // Counted once the deliveries are in, so a retried fan-out does not count a filtered target twice.
    for (const t of filtered) deps.metrics.filtered.labels(t).inc();
    if (filtered.length)
      deps.logger.debug('event filtered out for targets', { eventId: job.data.eventId, eventType, targets: filtered });
    return { targets: deliveries.map((d) => d.target.name), filtered };
  };
  const worker = new Worker<EventJob, RoutedFanoutResult>(eventQueueName(eventType), processor, {
    connection: deps.connection,
    prefix: deps.prefix,
    concurrency: 50,
    lockDuration: deps.lockDurationMs,
    stalledInterval: deps.stalledIntervalMs,
    settings: { backoffStrategy: fanoutBackoff },
  });
  worker.on('error', (err) =>
    deps.logger.repeated('warn', `fan-out worker error:${err.message}`, 'fan-out worker error', {
      eventType,
      error: err.message,
    }),
  );
  worker.on('failed', (job, err) => {
    if (!job || err instanceof UnrecoverableError) return; // unrouted: already logged and counted
    const final = job.attemptsMade >= (job.opts.attempts ?? 1);
    if (final) deps.metrics.fanoutFailures.labels(eventType).inc();
    const fields = { eventId: job.data.eventId, eventType, attempt: job.attemptsMade, error: err.message };
    if (final) deps.logger.error('fan-out failed for good; the event is kept as a failed job', fields);
    else
      deps.logger.repeated('warn', `fan-out retry:${eventType}:${err.message}`, 'fan-out failed; will retry', fields);
  });
  return worker;
}
