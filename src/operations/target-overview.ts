import type { BlockedKey } from '../ordering/sequencer';
import type { QueueRegistry } from '../pipeline/queue-registry';
import type { BlockedKeys } from './blocked-keys';
import { maskUrl } from '../logging/mask-url';
import { destinationUrls } from '../model/destination-schema';
import type { Target } from '../model/target-schema';

const HOUR_MS = 3_600_000;

/** One target at a glance, read from its delivery queue (and its ordering keys). */
export interface TargetOverview {
  target: string;
  /** Where it delivers: its URL, or its broker kind and servers; credentials masked. */
  where: string;
  paused: boolean;
  /** Deliveries completed in the last hour (as far as the completed-job retention keeps them). */
  deliveredLastHour: number;
  /** Deliveries dead-lettered in the last hour. */
  deadLetteredLastHour: number;
  /** Deliveries waiting for a retry after a failed attempt. */
  retrying: number;
  /** Deliveries queued, in flight or waiting for their turn. */
  pending: number;
  lastSuccess?: string;
  deadLetters: number;
  ordered: boolean;
  blocked: BlockedKey[];
  rateLimit?: { max: number; perMs: number };
}

/** Every configured target's overview, in configuration order. */
export async function targetOverviews(
  pipeline: Pick<QueueRegistry, 'targets' | 'deliveryQueue' | 'redis'>,
  blockedKeys: BlockedKeys,
  nowMs = Date.now(),
): Promise<TargetOverview[]> {
  return Promise.all(
    pipeline.targets().map(async (t): Promise<TargetOverview> => {
      const queue = pipeline.deliveryQueue(t.name)!;
      const since = nowMs - HOUR_MS;
      const { redis } = pipeline;
      const [paused, deliveredLastHour, deadLetteredLastHour, last, counts, delayedIds, blocked] = await Promise.all([
        queue.isPaused(),
        redis.zcount(queue.keys.completed!, since, '+inf'),
        redis.zcount(queue.keys.failed!, since, '+inf'),
        redis.zrevrange(queue.keys.completed!, 0, 0, 'WITHSCORES'),
        queue.getJobCounts('failed', 'waiting', 'active', 'prioritized', 'delayed'),
        queue.getRanges(['delayed'], 0, 999),
        blockedKeys.list(t.name),
      ]);
      // A delayed delivery is a retry once an attempt was made; before that it waits for its turn.
      const delayed = await Promise.all(delayedIds.map((id) => queue.getJob(id).catch(() => undefined)));
      const retrying = delayed.filter((j) => j && j.attemptsMade > 0).length;
      return {
        target: t.name,
        where: whereOf(t),
        paused,
        deliveredLastHour,
        deadLetteredLastHour,
        retrying,
        pending:
          (counts.waiting ?? 0) + (counts.active ?? 0) + (counts.prioritized ?? 0) + (counts.delayed ?? 0) - retrying,
        ...(last[1] !== undefined ? { lastSuccess: new Date(Number(last[1])).toISOString() } : {}),
        deadLetters: counts.failed ?? 0,
        ordered: blocked.ordered,
        blocked: blocked.blocked,
        ...(t.rateLimit ? { rateLimit: t.rateLimit } : {}),
      };
    }),
  );
}

/** A target's URL, or its broker destination's kind and URLs, with credentials masked. */
export function whereOf(t: Pick<Target, 'url' | 'destination'>): string {
  if (t.destination) return `${t.destination.type} ${destinationUrls(t.destination).map(maskUrl).join(', ')}`;
  return t.url === undefined ? '' : maskUrl(t.url);
}
