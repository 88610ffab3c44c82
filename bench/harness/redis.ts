import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { freePort, sleep, spawnTracked, stopChild } from './processes';

/** The harness's own throwaway Redis: nothing persisted, so disk never enters the figures. */
export class BenchRedis {
  private constructor(
    readonly url: string,
    readonly admin: Redis,
    private readonly child: ChildProcess,
  ) {}

  static async start(): Promise<BenchRedis> {
    const port = await freePort();
    const child = spawnTracked('redis-server', [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--maxmemory-policy',
      'noeviction',
    ]);
    const spawnFailed = new Promise<never>((_, reject) =>
      child.once('error', (err) =>
        reject(new Error(`cannot start redis-server (${err.message}): install it (apt-get install redis-server)`)),
      ),
    );
    const url = `redis://127.0.0.1:${port}`;
    const admin = await Promise.race([connectWhenUp(url), spawnFailed]);
    return new BenchRedis(url, admin, child);
  }

  get pid(): number {
    if (this.child.pid === undefined) throw new Error('redis-server has no pid');
    return this.child.pid;
  }

  /** Every phase starts from an empty Redis, so memory figures and job counts are its own. */
  async flush(): Promise<void> {
    await this.admin.flushall('SYNC');
  }

  /** `used_memory` from INFO: what Redis has allocated for data and overhead, in bytes. */
  async usedMemory(): Promise<number> {
    const info = await this.admin.info('memory');
    const m = /^used_memory:(\d+)/m.exec(info);
    if (!m || !m[1]) throw new Error('INFO memory has no used_memory');
    return Number(m[1]);
  }

  async version(): Promise<string> {
    const info = await this.admin.info('server');
    return /^redis_version:(\S+)/m.exec(info)?.[1] ?? 'unknown';
  }

  async stop(): Promise<void> {
    this.admin.disconnect();
    await stopChild(this.child, 2000);
  }
}

async function connectWhenUp(url: string): Promise<Redis> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.ping();
      return client;
    } catch {
      client.disconnect();
      if (Date.now() > deadline) throw new Error(`redis at ${url} did not start within 10 s`);
      await sleep(50);
    }
  }
}

export interface KeyCensus {
  /** Job hashes (and their logs), i.e. jobs the retention settings still keep. */
  jobs: number;
  /** Keys with a TTL (BullMQ de-duplication keys, the request-id index): they go by themselves. */
  expiring: number;
  /** Per-queue event streams, capped by BullMQ (`maxLenEvents`), and what they hold in bytes. */
  eventStreams: number;
  eventStreamBytes: number;
  /** Everything else without a TTL: queue structures (a fixed number per queue), or a leak. */
  other: number;
}

async function* scanKeys(redis: Redis, pattern: string, maxKeys = 20_000_000): AsyncGenerator<string[]> {
  let cursor = '0';
  let seen = 0;
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 5000);
    cursor = next;
    seen += keys.length;
    if (keys.length > 0) yield keys;
  } while (cursor !== '0' && seen < maxKeys);
}

async function ttls(redis: Redis, keys: readonly string[]): Promise<number[]> {
  const pipeline = redis.pipeline();
  for (const key of keys) pipeline.pttl(key);
  const replies = (await pipeline.exec()) ?? [];
  return replies.map(([err, ttl]) => (err ? -2 : Number(ttl)));
}

/** Counts keys under a prefix by what they are, to explain whatever memory a drain leaves behind. */
export async function censusKeys(redis: Redis, prefix: string): Promise<KeyCensus> {
  const census: KeyCensus = { jobs: 0, expiring: 0, eventStreams: 0, eventStreamBytes: 0, other: 0 };
  for await (const keys of scanKeys(redis, `${prefix}:*`)) {
    const ttl = await ttls(redis, keys);
    for (const [i, key] of keys.entries()) {
      const tail = key.slice(key.indexOf(':', prefix.length + 1) + 1);
      if ((ttl[i] ?? -1) > 0) census.expiring++;
      else if (tail === 'events') {
        census.eventStreams++;
        census.eventStreamBytes += Number((await redis.call('MEMORY', 'USAGE', key)) ?? 0);
      } else if (/^[0-9a-f]+-[0-9a-f]+(:logs)?$/.test(tail) || /^evt_[0-9a-f]{40}(:logs)?$/.test(tail)) census.jobs++;
      else census.other++;
    }
  }
  return census;
}

/**
 * `MEMORY USAGE` (every element counted) of every key under a prefix except BullMQ's event streams
 * (capped by BullMQ, not per event): what Redis holds for the events it remembers.
 */
export async function memoryUsage(
  redis: Redis,
  prefix: string,
): Promise<{ bytes: number; byKind: Record<string, { keys: number; bytes: number }> }> {
  let bytes = 0;
  const byKind: Record<string, { keys: number; bytes: number }> = {};
  for await (const keys of scanKeys(redis, `${prefix}:*`)) {
    const counted = keys.filter((key) => !key.endsWith(':events'));
    const pipeline = redis.pipeline();
    for (const key of counted) pipeline.call('MEMORY', 'USAGE', key, 'SAMPLES', '0');
    const replies = (await pipeline.exec()) ?? [];
    replies.forEach(([err, usage], i) => {
      if (err) return;
      const size = Number(usage ?? 0);
      bytes += size;
      const kind = keyKind(counted[i] ?? '', prefix);
      const entry = (byKind[kind] ??= { keys: 0, bytes: 0 });
      entry.keys++;
      entry.bytes += size;
    });
  }
  return { bytes, byKind };
}

/** A key's kind for the memory breakdown: its segments after the prefix, ids replaced by `*`. */
function keyKind(key: string, prefix: string): string {
  const parts = key.slice(prefix.length + 1).split(':');
  if (parts.length <= 2)
    return parts.length === 2 && /^[a-z-]+$/.test(parts[1] ?? '') ? 'queue structures' : `${parts[0]}:*`;
  return `${parts
    .slice(0, -1)
    .join(':')
    .replace(/^[a-z_.]+\.[a-z_]+:|^deliver\.[a-z0-9_-]+:/, '<queue>:')}:*`;
}

/** Deletes every key under a prefix that has a TTL, as if its time had come (de-duplication window passed). */
export async function expireExpiringKeys(redis: Redis, prefix: string): Promise<number> {
  let deleted = 0;
  for await (const keys of scanKeys(redis, `${prefix}:*`)) {
    const ttl = await ttls(redis, keys);
    const expiring = keys.filter((_, i) => (ttl[i] ?? -1) > 0);
    if (expiring.length > 0) deleted += await redis.unlink(...expiring);
  }
  return deleted;
}
