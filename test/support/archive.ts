import { Client, type Pool } from 'pg';
import { ARCHIVE_POOL } from '../../src/archive/pool-settings';
import { createPgPool } from '../../src/postgres/pool';
import { startArchiver, type RunningArchiver } from '../../src/archive/archiver';
import { sortEntries, type SortedEntries, type StreamEntry } from '../../src/archive/entries';
import { createKeyResolver } from '../../src/archive/key-registry';
import { createLogger } from '../../src/logging/logger';
import { keyPrefix } from '../../src/model/names';
import type { RedisClient } from '../../src/redis/connect';
import { buildHarness, LogCapture, type Harness } from './harness';
import { freshDatabase } from './postgres';

/** Runs one query against an archive database on a connection of its own. */
export async function queryArchive<T extends Record<string, unknown>>(
  url: string,
  sql: string,
  params: unknown[] = [],
): Promise<T[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

/** Waits until `count()` reaches `expected` (or `timeoutMs` passes), and returns the last count. */
export async function waitForCount(count: () => Promise<number>, expected: number, timeoutMs = 20000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let last = await count().catch(() => -1);
  while (last < expected && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    last = await count().catch(() => -1);
  }
  return last;
}

/** Rows in webhook_archive.notifications (-1 while the table is not there yet). */
export function notificationCount(url: string): Promise<number> {
  return queryArchive<{ n: string }>(url, 'SELECT count(*) AS n FROM webhook_archive.notifications').then((r) =>
    Number(r[0]?.n),
  );
}

/** A receiver (the real app, in-process) with the archive on, and an archiver draining its stream into `url`. */
export interface ArchiveHarness {
  h: Harness;
  url: string;
  pool: Pool;
  /** The environment the harness was built from (for the CLI). */
  env: Record<string, string>;
  /** Until the archive stream is empty: every entry written to PostgreSQL (and deleted). */
  settled(): Promise<void>;
  stopArchiver(): Promise<void>;
  startArchiver(): Promise<void>;
  /** Stream entries as the archiver reads them for a batch: sorted, each row with its key's PEM from the registry. */
  read(entries: readonly StreamEntry[]): Promise<SortedEntries>;
  close(): Promise<void>;
}

export async function buildArchiveHarness(
  name: string,
  env: Record<string, string> = {},
  opts: { batchSize?: number } = {},
): Promise<ArchiveHarness> {
  const url = await freshDatabase(name);
  const h = buildHarness({ ARCHIVE_URL: url, ...env });
  await h.ready();
  const pg = createPgPool(url, ARCHIVE_POOL);
  const pool = pg.pool;
  const prefix = keyPrefix(h.config.queuePrefix);
  let running: { archiver: RunningArchiver; redis: RedisClient } | undefined;
  const harness: ArchiveHarness = {
    h,
    url,
    pool,
    env: { ARCHIVE_URL: url, REDIS_URL: h.config.redisUrl, QUEUE_PREFIX: h.config.queuePrefix, ...env },
    async settled() {
      const drained = async () => ((await h.redis.xlen(`${prefix}:archive`)) === 0 ? 1 : 0);
      if ((await waitForCount(drained, 1)) !== 1) throw new Error('the archive stream did not drain');
    },
    async read(entries) {
      const sorted = sortEntries(entries);
      await createKeyResolver(h.redis, prefix)(sorted.notifications);
      return sorted;
    },
    async startArchiver() {
      const redis = h.connector.open('worker');
      redis.on('error', () => undefined);
      const settings = { prefix, batchSize: opts.batchSize ?? 100, claimIdleMs: 1000, retainDays: 2557 };
      const archiver = startArchiver(redis, pool, settings, createLogger('warn', new LogCapture().stream));
      running = { archiver, redis };
      await archiver.migrated;
    },
    async stopArchiver() {
      await running?.archiver.close();
      running?.redis.disconnect();
      running = undefined;
    },
    async close() {
      await harness.stopArchiver();
      await pg.close(ARCHIVE_POOL.timeoutMs);
      await h.close();
    },
  };
  await harness.startArchiver();
  return harness;
}
