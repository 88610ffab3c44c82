import type { Worker } from 'bullmq';
import type { Config } from '../config/schema';
import { EVENT_TYPES } from '../events/table';
import type { Logger } from '../logging/logger';
import type { Metrics } from '../monitoring/metrics';
import type { Pipeline } from '../pipeline/pipeline';
import { reportConnectionErrors, type RedisConnector } from '../redis/connect';
import { createDeliveryWorker } from './delivery-worker';
import { createFanoutWorker } from './fanout-worker';

export interface RunningWorkers {
  /** Lets in-flight deliveries finish within the bound; what is left stays queued for another worker. */
  close(): Promise<void>;
}

/** Starts the fan-out workers (one per event type) and a delivery worker per target, over the process's pipeline. */
export function startWorkers(config: Config, pipeline: Pipeline, logger: Logger, metrics: Metrics, redis: RedisConnector): RunningWorkers {
  const connection = redis.open('worker');
  reportConnectionErrors(connection, logger, 'worker');
  const deps = {
    connection,
    prefix: pipeline.prefix,
    logger,
    metrics,
    lockDurationMs: config.worker.lockDurationMs,
    stalledIntervalMs: config.worker.stalledIntervalMs,
  };
  const fanouts = EVENT_TYPES.map((type) => createFanoutWorker(type, { ...deps, pipeline }));
  const deliveries = pipeline.targets().map((t) => createDeliveryWorker(t, deps));
  const workers: Worker[] = [...fanouts, ...deliveries.map((d) => d.worker)];
  logger.info('workers started', { targets: pipeline.targets().map((t) => t.name), eventTypes: EVENT_TYPES.length });

  return {
    async close() {
      const graceful = Promise.all(workers.map((w) => w.close()));
      const timedOut = await Promise.race([
        graceful.then(() => false),
        new Promise<boolean>((r) => setTimeout(() => r(true), config.worker.shutdownTimeoutMs).unref()),
      ]);
      if (timedOut) {
        logger.warn('in-flight deliveries did not finish in time; they will be picked up again', { timeoutMs: config.worker.shutdownTimeoutMs });
        await Promise.all(workers.map((w) => w.close(true)));
      }
      await Promise.all(deliveries.map((d) => d.close()));
      connection.disconnect();
    },
  };
}
