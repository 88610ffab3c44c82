import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { EventType } from '../events/table';
import type { EventJob } from '../queue/job';
import { eventQueueName } from '../queue/names';
import { indexRequestIds } from '../operations/request-index';
import { toDeliveryJob } from './delivery-job';
import type { WorkerDeps } from './delivery-worker';
import { subscribes, type Target } from './target-schema';

const FANOUT_MAX_BACKOFF_MS = 60_000;

export interface FanoutDeps extends WorkerDeps {
  targets: readonly Target[];
  deliveryQueues: ReadonlyMap<string, Queue>;
  retention: { completedAgeSeconds: number; completedCount: number };
  /** How long the request_id index keeps an entry. */
  dedupWindowMs: number;
}

/**
 * Turns each event of one type into one delivery job per subscribed target. The delivery job id is
 * the event id, so if this step is retried after a partial failure, targets that already have the
 * delivery are not given a second one.
 */
export function createFanoutWorker(eventType: EventType, deps: FanoutDeps): Worker<EventJob> {
  const subscribed = deps.targets.filter((t) => subscribes(t, eventType));
  const processor = async (job: Job<EventJob>): Promise<{ targets: string[] }> => {
    // The index serves look-ups only: written alongside the deliveries, and its failure never holds them back.
    const indexing = indexRequestIds(deps.connection, deps.prefix, job.data.payload, job.data.eventId, deps.dedupWindowMs).catch((err: Error) =>
      deps.logger.warn('request_id index not written', { eventId: job.data.eventId, error: err.message }),
    );
    if (subscribed.length === 0) {
      await indexing;
      deps.metrics.unrouted.labels(eventType).inc();
      deps.logger.warn('event kept: no target subscribes to its type', { eventId: job.data.eventId, eventType });
      throw new UnrecoverableError(`no target subscribes to ${eventType}; the event is kept here, retry it once one does`);
    }
    await Promise.all([
      indexing,
      ...subscribed.map((target) =>
        deps.deliveryQueues.get(target.name)!.add(eventType, toDeliveryJob(job.data, target.name), {
          jobId: job.data.eventId,
          attempts: target.maxAttempts,
          backoff: { type: 'target' },
          removeOnComplete: { age: deps.retention.completedAgeSeconds, count: deps.retention.completedCount },
          removeOnFail: false, // dead letters stay until an operator replays or removes them
        }),
      ),
    ]);
    return { targets: subscribed.map((t) => t.name) };
  };
  const worker = new Worker<EventJob>(eventQueueName(eventType), processor, {
    connection: deps.connection,
    prefix: deps.prefix,
    concurrency: 50,
    lockDuration: deps.lockDurationMs,
    stalledInterval: deps.stalledIntervalMs,
    settings: { backoffStrategy: (attemptsMade) => Math.min(1000 * 2 ** Math.max(0, attemptsMade - 1), FANOUT_MAX_BACKOFF_MS) },
  });
  worker.on('error', (err) => deps.logger.warn('fan-out worker error', { eventType, error: err.message }));
  worker.on('failed', (job, err) => {
    if (!job || err instanceof UnrecoverableError) return; // unrouted: already logged and counted
    const final = job.attemptsMade >= (job.opts.attempts ?? 1);
    if (final) deps.metrics.fanoutFailures.labels(eventType).inc();
    deps.logger[final ? 'error' : 'warn'](final ? 'fan-out failed for good; the event is kept as a failed job' : 'fan-out failed; will retry', {
      eventId: job.data.eventId,
      eventType,
      attempt: job.attemptsMade,
      error: err.message,
    });
  });
  return worker;
}
