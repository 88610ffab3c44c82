import { DelayedError, Worker, UnrecoverableError, type Job } from 'bullmq';
import type { RecordDeliveryEnd } from '../pipeline/archive-outcome';
import type { DeliveryEnd } from '../model/archive';
import type { RedisClient } from '../redis/connect';
import type { Logger } from '../logging/logger';
import type { Metrics } from '../monitoring/metrics';
import { failureFacts } from './attempt';
import { deliveryBackoff } from './backoff';
import type { DeliveryFailure, DeliveryJob, DeliveryResult, DroppedDelivery } from '../model/jobs';
import { deliveryQueueName } from '../model/names';
import { buildRequest, type OutgoingRequest } from './build-request';
import { createSigner } from './signer';
import { createTransport } from './transport';
import { createShaper } from './transform-step';
import { maskHeaders } from '../logging/mask-headers';
import type { Target } from '../model/target-schema';
import type { Sequencer } from '../ordering/sequencer';
import { tracing } from '../tracing/tracing';

export interface WorkerDeps {
  /** A connection for BullMQ workers (blocking commands, retries for ever). */
  connection: RedisClient;
  /** The pipeline's key prefix. */
  prefix: string;
  logger: Logger;
  metrics: Metrics;
  lockDurationMs: number;
  stalledIntervalMs: number;
  /** Tells the archive how a delivery ended (delivered, dead-lettered, dropped), when it is on. */
  recordEnd?: RecordDeliveryEnd;
}

/**
 * Consumes one target's delivery queue with that target's concurrency, rate limit and backoff. With
 * ordered delivery (`sequencer`), a delivery goes only in its turn; out of turn it is parked again
 * (delayed, no attempt spent) until the delivery before it is done.
 */
export function createDeliveryWorker(
  target: Target,
  deps: WorkerDeps,
  sequencer?: Sequencer,
): { worker: Worker; close(ms?: number): Promise<void> } {
  const transport = createTransport(target, deps.logger);
  const sign = createSigner(target);
  // Only a target with a transform has one: the others build their request exactly as before.
  const shaper = createShaper(target);
  const { logger, metrics } = deps;
  const series = metrics.target(target.name);
  const ended = (job: Job<DeliveryJob>, state: DeliveryEnd, attempts: number) =>
    deps.recordEnd?.({ eventId: job.data.eventId, target: target.name, state, attempts }, (err) =>
      logger.repeated('warn', 'archive:delivery-end', 'archive: a delivery outcome was not recorded', {
        target: target.name,
        error: err.message,
      }),
    );

  /** Done: the next delivery of its key may go (a failure here is repaired by that delivery itself, later). */
  async function advance(job: Job<DeliveryJob>, step: 'delivered' | 'deadLettered'): Promise<void> {
    if (!sequencer || job.data.orderKey === undefined) return;
    await Promise.resolve(sequencer[step](job)).catch((err: Error) =>
      logger.repeated(
        'warn',
        `order:${err.message}`,
        'ordered delivery: the next delivery of the key was not woken; it wakes by itself',
        { target: target.name, eventId: job.data.eventId, error: err.message },
      ),
    );
  }

  const processor = async (job: Job<DeliveryJob>, token?: string): Promise<DeliveryResult | DroppedDelivery> => {
    // A job added to wait (no delay) headed its key's sequence when it was received, and nothing can
    // get ahead of it (sequences only grow at the end): only a parked one has to ask for its turn.
    if (sequencer && job.data.orderKey !== undefined && job.opts.delay) {
      const turn = await sequencer.turn(job);
      if (!turn.deliver) {
        await job.moveToDelayed(Date.now() + turn.parkMs, token);
        throw new DelayedError();
      }
    }
    const attempt = job.attemptsMade + 1;
    const { eventId, eventType } = job.data;
    // In the trace the notification was received in (stored with the job), however late or wherever it runs.
    const span = tracing.attempt({ trace: job.data.trace, target: target.name, eventId, eventType, attempt });
    let req: OutgoingRequest | undefined;
    try {
      if (shaper) {
        const started = performance.now();
        const body = await shaper.shape(job.data);
        if (body === null) {
          const dropped: DroppedDelivery = { dropped: 'transform', latencyMs: Math.round(performance.now() - started) };
          span?.dropped(dropped.latencyMs);
          await advance(job, 'delivered');
          metrics.deliveries.labels(target.name, eventType, 'dropped').inc();
          logger.record('info', 'dropped by the transform', { eventId, eventType, target: target.name, attempt });
          await ended(job, 'dropped', attempt);
          return dropped;
        }
        req = buildRequest(job.data, target, sign, new Date(), body);
      } else {
        req = buildRequest(job.data, target, sign, new Date());
      }
      // Set on the message itself, so every transport carries it into the merchant's system.
      span?.inject(req.headers);
      const result = await transport.send(req, job.data);
      await advance(job, 'delivered');
      await ended(job, 'delivered', attempt);
      series.delivered(eventType).inc();
      const sinceReceipt = (Date.now() - Date.parse(job.data.receivedAt)) / 1000;
      if (span) {
        span.delivered(result.status, result.latencyMs);
        metrics.observeDelivery(target.name, sinceReceipt, span.traceId);
      } else {
        series.latency.observe(sinceReceipt);
      }
      logger.record('info', 'delivered', {
        eventId,
        eventType,
        target: target.name,
        attempt,
        status: result.status,
        latencyMs: result.latencyMs,
        ...span?.logIds,
      });
      return result;
    } catch (err) {
      const error = (err as Error).message;
      const facts = failureFacts(err);
      const final = err instanceof UnrecoverableError || attempt >= (job.opts.attempts ?? 1);
      const failure: DeliveryFailure = {
        at: new Date().toISOString(),
        attempt,
        target: target.name,
        error,
        ...facts,
        requestHeaders: req ? maskHeaders(req.headers) : undefined,
      };
      span?.failed({ errorClass: facts?.errorClass, status: facts?.status, latencyMs: facts?.latencyMs, error, final });
      await job.log(JSON.stringify(failure));
      const fields = {
        eventId,
        eventType,
        target: target.name,
        attempt,
        errorClass: facts?.errorClass,
        status: facts?.status,
        latencyMs: facts?.latencyMs,
        error,
        ...span?.logIds,
      };
      if (final) {
        await job.updateData({ ...job.data, lastFailure: failure });
        metrics.deliveries.labels(target.name, eventType, 'dead_lettered').inc();
        metrics.deadLetters.labels(target.name).inc();
        logger.error('delivery dead-lettered', fields);
        await advance(job, 'deadLettered');
        await ended(job, 'dead_lettered', attempt);
      } else {
        metrics.deliveries.labels(target.name, eventType, 'retry').inc();
        // A target that is down fails every delivery the same way: one line per interval, with the count.
        logger.repeated(
          'warn',
          `retry:${target.name}:${facts?.errorClass ?? error}:${facts?.status ?? ''}`,
          'delivery attempt failed; will retry',
          fields,
        );
      }
      throw err;
    }
  };

  const worker = new Worker<DeliveryJob, DeliveryResult | DroppedDelivery>(deliveryQueueName(target.name), processor, {
    connection: deps.connection,
    prefix: deps.prefix,
    concurrency: target.concurrency,
    limiter: target.rateLimit ? { max: target.rateLimit.max, duration: target.rateLimit.perMs } : undefined,
    lockDuration: deps.lockDurationMs,
    stalledInterval: deps.stalledIntervalMs,
    maxStalledCount: 5,
    settings: { backoffStrategy: deliveryBackoff(target) },
  });
  worker.on('error', (err) =>
    logger.repeated('warn', `delivery worker error:${err.message}`, 'delivery worker error', {
      target: target.name,
      error: err.message,
    }),
  );
  return {
    worker,
    /** Lets requests under way end within `ms`, then cuts them (their jobs are retried). */
    close: async (ms = 1000) => {
      await Promise.all([transport.close(ms), shaper?.close()]);
    },
  };
}
