import type { Worker } from 'bullmq';
import type { Config } from '../config/schema';
import { EVENT_TYPES } from '../model/event-table';
import type { Logger } from '../logging/logger';
import type { Metrics } from '../monitoring/metrics';
import type { Producer } from '../pipeline/producer';
import type { QueueRegistry } from '../pipeline/queue-registry';
import { reportConnectionErrors, type RedisConnector } from '../redis/connect';
import { createDeliveryWorker } from './delivery-worker';
import { coalesceEveryTurn } from '../redis/coalesce-writes';
import type { RecordDeliveryEnd } from '../pipeline/archive-outcome';
import { settlesWithin } from '../model/with-timeout';
import { createFanoutWorker } from './fanout-worker';
import type { Target } from '../model/target-schema';

/** Logged when workers are stopped by cutting their connections. */
export const WORKERS_CUT =
  'workers did not stop in time (deliveries in flight, or Redis not answering); cutting their connections: ' +
  'unfinished deliveries are picked up again';

/** Each step of a forced stop waits at most this long. */
const FORCED_STEP_MS = 1000;

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
export function startWorkers(
  config: Config,
  pipeline: Pick<QueueRegistry, 'prefix' | 'targets' | 'ordering'> &
    Pick<Producer, 'addDeliveries'> & { recordDeliveryEnd?: RecordDeliveryEnd },
  logger: Logger,
  metrics: Metrics,
  redis: RedisConnector,
): RunningWorkers {
  const connection = redis.open('worker');
  coalesceEveryTurn(connection);
  reportConnectionErrors(connection, logger, 'worker');
  const deps = {
    connection,
    prefix: pipeline.prefix,
    logger,
    metrics,
    lockDurationMs: config.worker.lockDurationMs,
    stalledIntervalMs: config.worker.stalledIntervalMs,
    recordEnd: pipeline.recordDeliveryEnd,
  };
  const fanouts = EVENT_TYPES.map((type) => createFanoutWorker(type, { ...deps, pipeline }));
  type Running = { target: Target; delivery: ReturnType<typeof createDeliveryWorker> };
  const deliveries = new Map<string, Running>();
  const start = (t: Target) =>
    deliveries.set(t.name, { target: t, delivery: createDeliveryWorker(t, deps, pipeline.ordering(t.name)) });
  pipeline.targets().forEach(start);
  logger.info('workers started', { targets: pipeline.targets().map((t) => t.name), eventTypes: EVENT_TYPES.length });

  /**
   * Stops workers within the shutdown bound: in-flight deliveries finish, or return after the lock
   * expires. Past the bound the workers' connections are cut, and with `cutShared` (the process is
   * stopping) the shared one too, which fails a command stuck on a dead node (seen after a cluster
   * failover: the graceful close then never ended). `close(true)` cannot do it: BullMQ hands back the
   * close already under way. Every wait here is bounded; what is left stays queued for another worker.
   */
  async function stop(workers: Worker[], agents: Running['delivery'][], cutShared: boolean): Promise<void> {
    const closed = Promise.all(workers.map((w) => w.close()));
    if (!(await settlesWithin(closed, config.worker.shutdownTimeoutMs))) {
      logger.warn(WORKERS_CUT, { timeoutMs: config.worker.shutdownTimeoutMs });
      await settlesWithin(Promise.allSettled(workers.map((w) => w.disconnect())), FORCED_STEP_MS);
      if (cutShared) connection.disconnect();
      if (!(await settlesWithin(closed, FORCED_STEP_MS)))
        logger.warn('workers did not close after their connections were cut; leaving them', {
          workers: workers.length,
        });
    }
    await Promise.all(agents.map((d) => d.close(FORCED_STEP_MS)));
  }

  return {
    async applyTargets(next) {
      const names = new Set(next.map((t) => t.name));
      const changed = next.filter(
        (t) => deliveries.has(t.name) && JSON.stringify(deliveries.get(t.name)!.target) !== JSON.stringify(t),
      );
      const leaving = [...deliveries.values()].filter(
        (r) => !names.has(r.target.name) || changed.some((t) => t.name === r.target.name),
      );
      await stop(
        leaving.map((r) => r.delivery.worker),
        leaving.map((r) => r.delivery),
        false,
      );
      for (const r of leaving) deliveries.delete(r.target.name);
      for (const t of next) if (!deliveries.has(t.name)) start(t);
    },
    async close() {
      const running = [...deliveries.values()];
      await stop(
        [...fanouts, ...running.map((r) => r.delivery.worker)],
        running.map((r) => r.delivery),
        true,
      );
      connection.disconnect();
    },
  };
}
