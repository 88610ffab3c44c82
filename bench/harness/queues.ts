import type { Redis } from 'ioredis';
import { openQueue } from '../../src/pipeline/queues';
import { sleep } from './processes';

/** Every BullMQ queue under a prefix (each has a `meta` hash), the service's delivery queues included. */
export async function queueNames(redis: Redis, prefix: string): Promise<string[]> {
  const names = new Set<string>();
  let cursor = '0';
  for (let rounds = 0; rounds < 100_000; rounds++) {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*:meta`, 'COUNT', 5000);
    for (const key of keys) names.add(key.slice(prefix.length + 1, -':meta'.length));
    cursor = next;
    if (cursor === '0') break;
  }
  return [...names].sort();
}

export interface JobTotals {
  /** Waiting, active, delayed or prioritized: not finished yet. */
  pending: number;
  completed: number;
  failed: number;
}

export async function jobTotals(redis: Redis, prefix: string): Promise<JobTotals> {
  const totals: JobTotals = { pending: 0, completed: 0, failed: 0 };
  for (const name of await queueNames(redis, prefix)) {
    // A Queue on a shared connection: close() leaves the connection open.
    const queue = openQueue(redis, prefix, name);
    const c = await queue.getJobCounts(
      'waiting',
      'active',
      'delayed',
      'prioritized',
      'waiting-children',
      'completed',
      'failed',
    );
    await queue.close();
    totals.pending +=
      (c.waiting ?? 0) + (c.active ?? 0) + (c.delayed ?? 0) + (c.prioritized ?? 0) + (c['waiting-children'] ?? 0);
    totals.completed += c.completed ?? 0;
    totals.failed += c.failed ?? 0;
  }
  return totals;
}

/** Waits until no job is pending in any queue (a drain's last completions are written after the sink has the event). */
export async function waitUntilSettled(redis: Redis, prefix: string, timeoutMs: number): Promise<JobTotals> {
  const deadline = Date.now() + timeoutMs;
  let totals = await jobTotals(redis, prefix);
  while (totals.pending > 0 && Date.now() < deadline) {
    await sleep(200);
    totals = await jobTotals(redis, prefix);
  }
  return totals;
}

/**
 * Removes completed jobs the way the retention settings eventually do (`removeOnComplete` age: job
 * hash and logs gone, de-duplication keys kept until their own TTL), so the memory left afterwards
 * shows what outlives the retention window. Queue.clean() would also delete de-duplication keys.
 */
export async function expireRetainedCompleted(redis: Redis, prefix: string): Promise<number> {
  let removed = 0;
  for (const name of await queueNames(redis, prefix)) {
    const completedKey = `${prefix}:${name}:completed`;
    for (let rounds = 0; rounds < 10_000; rounds++) {
      const ids = await redis.zrange(completedKey, 0, 999);
      if (ids.length === 0) break;
      const pipeline = redis.pipeline();
      for (const id of ids) pipeline.del(`${prefix}:${name}:${id}`, `${prefix}:${name}:${id}:logs`);
      pipeline.zrem(completedKey, ...ids);
      await pipeline.exec();
      removed += ids.length;
    }
  }
  return removed;
}
