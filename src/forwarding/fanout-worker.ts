import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { EventType } from '../events/table';
import { fanoutBackoff } from '../pipeline/job-options';
import type { EventJob, FanoutResult } from '../pipeline/jobs';
import { eventQueueName } from '../pipeline/names';
import type { Pipeline } from '../pipeline/pipeline';
import type { WorkerDeps } from './delivery-worker';
import { subscribes } from './target-schema';

export interface FanoutDeps extends WorkerDeps {
  pipeline: Pipeline;
}

/**
 * Turns each event of one type into one delivery job per subscribed target. The delivery job id is
 * the event id, so if this step is retried after a partial failure, targets that already have the
 * delivery are not given a second one.
 */
export function createFanoutWorker(eventType: EventType, deps: FanoutDeps): Worker<EventJob, FanoutResult> {
  const { pipeline } = deps;
  const processor = async (job: Job<EventJob>): Promise<FanoutResult> => {
    // Read per job, so targets reloaded at run time take effect without a restart.
    const subscribed = pipeline.targets().filter((t) => subscribes(t, eventType));
    // The index serves look-ups only: written alongside the deliveries, and its failure never holds them back.
    const indexing = pipeline.indexRequestIds(job.data).catch((err: Error) =>
      deps.logger.repeated('warn', `index:${err.message}`, 'request_id index not written', { eventId: job.data.eventId, error: err.message }),
    );
    if (subscribed.length === 0) {
      await indexing;
      deps.metrics.unrouted.labels(eventType).inc();
      deps.logger.warn('event kept: no target subscribes to its type', { eventId: job.data.eventId, eventType });
      throw new UnrecoverableError(`no target subscribes to ${eventType}; the event is kept here, retry it once one does`);
    }
    await Promise.all([indexing, pipeline.addDeliveries(job.data, subscribed)]);
    return { targets: subscribed.map((t) => t.name) };
  };
  const worker = new Worker<EventJob, FanoutResult>(eventQueueName(eventType), processor, {
    connection: deps.connection,
    prefix: deps.prefix,
    concurrency: 50,
    lockDuration: deps.lockDurationMs,
    stalledInterval: deps.stalledIntervalMs,
    settings: { backoffStrategy: fanoutBackoff },
  });
  worker.on('error', (err) => deps.logger.repeated('warn', `fan-out worker error:${err.message}`, 'fan-out worker error', { eventType, error: err.message }));
  worker.on('failed', (job, err) => {
    if (!job || err instanceof UnrecoverableError) return; // unrouted: already logged and counted
    const final = job.attemptsMade >= (job.opts.attempts ?? 1);
    if (final) deps.metrics.fanoutFailures.labels(eventType).inc();
    const fields = { eventId: job.data.eventId, eventType, attempt: job.attemptsMade, error: err.message };
    if (final) deps.logger.error('fan-out failed for good; the event is kept as a failed job', fields);
    else deps.logger.repeated('warn', `fan-out retry:${eventType}:${err.message}`, 'fan-out failed; will retry', fields);
  });
  return worker;
}
