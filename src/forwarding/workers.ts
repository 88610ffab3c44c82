import type { Worker } from 'bullmq';
import type { Config } from '../config/schema';
import { EVENT_TYPES } from '../events/table';
import type { Logger } from '../logging/logger';
import type { Metrics } from '../monitoring/metrics';
import type { Pipeline } from '../pipeline/pipeline';
import { reportConnectionErrors, type RedisConnector } from '../redis/connect';
import { createDeliveryWorker } from './delivery-worker';
import { createFanoutWorker } from './fanout-worker';
import type { Target } from './target-schema';

export interface RunningWorkers {
  /**
   * After a configuration reload: starts a worker for each new target, restarts the worker of each
   * changed one, and stops the worker of each removed one (its queue and dead letters stay in Redis).
   * The fan-out reads the pipeline's targets per event, so it needs nothing here.
   */
  applyTargets(targets: readonly Target[]): Promise<void>;
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
  type Running = { target: Target; delivery: ReturnType<typeof createDeliveryWorker> };
  const deliveries = new Map<string, Running>();
  const start = (t: Target) => deliveries.set(t.name, { target: t, delivery: createDeliveryWorker(t, deps, pipeline.ordering(t.name)) });
  pipeline.targets().forEach(start);
  logger.info('workers started', { targets: pipeline.targets().map((t) => t.name), eventTypes: EVENT_TYPES.length });

  /** Stops workers within the shutdown bound: in-flight deliveries finish, or return after the lock expires. */
  async function stop(workers: Worker[], agents: Running['delivery'][]): Promise<void> {
    const graceful = Promise.all(workers.map((w) => w.close()));
    const timedOut = await Promise.race([
      graceful.then(() => false),
      new Promise<boolean>((r) => setTimeout(() => r(true), config.worker.shutdownTimeoutMs).unref()),
    ]);
    if (timedOut) {
      logger.warn('in-flight deliveries did not finish in time; they will be picked up again', { timeoutMs: config.worker.shutdownTimeoutMs });
      await Promise.all(workers.map((w) => w.close(true)));
    }
    await Promise.all(agents.map((d) => d.close()));
  }

  return {
    async applyTargets(next) {
      const names = new Set(next.map((t) => t.name));
      const changed = next.filter((t) => deliveries.has(t.name) && JSON.stringify(deliveries.get(t.name)!.target) !== JSON.stringify(t));
      const leaving = [...deliveries.values()].filter((r) => !names.has(r.target.name) || changed.some((t) => t.name === r.target.name));
      await stop(leaving.map((r) => r.delivery.worker), leaving.map((r) => r.delivery));
      for (const r of leaving) deliveries.delete(r.target.name);
      for (const t of next) if (!deliveries.has(t.name)) start(t);
    },
    async close() {
      const running = [...deliveries.values()];
      await stop([...fanouts, ...running.map((r) => r.delivery.worker)], running.map((r) => r.delivery));
      connection.disconnect();
    },
  };
}
