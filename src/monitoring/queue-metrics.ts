import type { Logger } from '../logging/logger';
import type { RedisClient } from '../redis/connect';
import type { QueueRegistry } from '../pipeline/queue-registry';
import { Gauge, type Registry } from 'prom-client';
import { JOB_STATES, summariseQueues } from './queue-summary';
import type { DurabilityRisk } from './redis-durability';

/**
 * Gauges read from Redis at scrape time: queue depth by queue and state, the age of the oldest
 * waiting job, whether Redis is connected, and durability risks found at start.
 */
export function registerQueueMetrics(
  registry: Registry,
  pipeline: Pick<QueueRegistry, 'allQueues' | 'redis'>,
  logger: Pick<Logger, 'repeated'>,
) {
  const redis: RedisClient = pipeline.redis;
  const lastCollect = { at: 0, promise: Promise.resolve() };
  // Both gauges come from one read of every queue, shared by the two collect callbacks of a scrape.
  const collectQueues = (): Promise<void> => {
    if (Date.now() - lastCollect.at > 500) {
      lastCollect.at = Date.now();
      lastCollect.promise = summariseQueues(pipeline, logger).then(
        (summaries) => {
          for (const s of summaries) {
            for (const state of JOB_STATES) depth.labels(s.queue, state).set(s.counts[state] ?? 0);
            oldest.labels(s.queue).set(s.oldestWaitingSeconds);
          }
        },
        () => undefined, // Redis down: keep the last values; webhook_redis_up says why
      );
    }
    return lastCollect.promise;
  };
  const depth = new Gauge({
    name: 'webhook_queue_jobs',
    help: 'Jobs in each queue by state',
    labelNames: ['queue', 'state'] as const,
    registers: [registry],
    collect: collectQueues,
  });
  const oldest = new Gauge({
    name: 'webhook_queue_oldest_waiting_seconds',
    help: 'Age of the oldest job waiting in each queue (0 when none waits)',
    labelNames: ['queue'] as const,
    registers: [registry],
    collect: collectQueues,
  });

  new Gauge({
    name: 'webhook_redis_up',
    help: '1 when the connection to Redis is ready',
    registers: [registry],
    collect() {
      this.set(redis.status === 'ready' ? 1 : 0);
    },
  });
  const risk = new Gauge({
    name: 'webhook_redis_durability_risk',
    help: '1 when Redis could lose acknowledged events: eviction_policy (not noeviction) or no_persistence',
    labelNames: ['risk'] as const,
    registers: [registry],
  });
  return {
    recordDurability(risks: readonly DurabilityRisk[]) {
      risk.labels('eviction_policy').set(risks.includes('eviction_policy') ? 1 : 0);
      risk.labels('no_persistence').set(risks.includes('no_persistence') ? 1 : 0);
    },
  };
}
