import { Gauge, type Registry } from 'prom-client';
import type { QueueRegistry } from '../pipeline/queue-registry';

/**
 * Gauges read from Redis at scrape time for every target with `order`: how many of its keys a dead
 * letter holds back (`onDeadLetter: block`), and how long the oldest has been held (0 when none).
 * Every process reads the same Redis, so every process reports the same values.
 */
export function registerOrderingMetrics(
  registry: Registry,
  pipeline: Pick<QueueRegistry, 'targets' | 'ordering'>,
): void {
  const lastCollect = { at: 0, promise: Promise.resolve() };
  // Both gauges come from one read per ordered target, shared by the two collect callbacks of a scrape.
  const collect = (): Promise<void> => {
    if (Date.now() - lastCollect.at > 500) {
      lastCollect.at = Date.now();
      const ordered = pipeline.targets().filter((t) => t.order);
      lastCollect.promise = Promise.all(
        ordered.map(async (t) => ({ target: t.name, summary: await pipeline.ordering(t.name)!.blockedSummary() })),
      ).then(
        (summaries) => {
          // A target removed or no longer ordered since the last scrape loses its series.
          blockedKeys.reset();
          oldestBlocked.reset();
          const now = Date.now();
          for (const { target, summary } of summaries) {
            blockedKeys.labels(target).set(summary.count);
            oldestBlocked
              .labels(target)
              .set(summary.oldestMs === undefined ? 0 : Math.max(0, now - summary.oldestMs) / 1000);
          }
        },
        () => undefined, // Redis down: keep the last values; webhook_redis_up says why
      );
    }
    return lastCollect.promise;
  };
  const blockedKeys = new Gauge({
    name: 'webhook_ordering_blocked_keys',
    help:
      'Ordering keys of a target whose first delivery is a dead letter holding back the later ones (onDeadLetter: ' +
      'block)',
    labelNames: ['target'] as const,
    registers: [registry],
    collect,
  });
  const oldestBlocked = new Gauge({
    name: 'webhook_ordering_oldest_blocked_seconds',
    help:
      'How long the longest-blocked ordering key of a target has been held back by its dead letter (0 when none ' +
      'is)',
    labelNames: ['target'] as const,
    registers: [registry],
    collect,
  });
}
