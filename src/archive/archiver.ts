import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Pool } from 'pg';
import type { RedisClient } from '../redis/connect';
import type { Logger } from '../logging/logger';
import { ownKeys } from '../model/names';
import { migrate } from './migrations';
import { dropMonthsBefore } from './partitions';
import { sortEntries, type StreamEntry } from './entries';
import { UnknownKeyError, writeBatch } from './write-batch';
import { createKeyResolver } from './key-registry';
import { createStreamReader } from './stream-reader';
import { pgErrorClass } from '../postgres/failure';

const GROUP = 'archiver';
const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 5000;
const RETENTION_EVERY_MS = 3_600_000;
const DAY_MS = 86_400_000;

export interface ArchiverSettings {
  /** The queue prefix (`{whr}`) the archive stream lives under. */
  prefix: string;
  batchSize: number;
  claimIdleMs: number;
  retainDays: number;
}

/** What readiness and the metrics say of the archive. */
export interface ArchiveState {
  /** `starting` until the schema is migrated; `down` while PostgreSQL refuses or is unreachable. */
  state: 'starting' | 'up' | 'down';
  /** The last failure's SQLSTATE class (`08`, `57`, …) or `network`, while down. */
  errorClass?: string;
  /** Notifications, replays, delivery outcomes and changes of expectations written since start. */
  written: number;
}

export interface Backlog {
  /** Entries in the archive stream not yet written (and deleted) by an archiver. */
  entries: number;
  /** Age of the oldest, 0 when none. */
  oldestAgeSeconds: number;
}

export interface RunningArchiver {
  state(): ArchiveState;
  /** Resolves once the schema is in place (tests, and the first write, wait on it). */
  migrated: Promise<void>;
  close(): Promise<void>;
}

/** How much of the archive stream is still to be written: its length and the age of its first entry. */
export async function archiveBacklog(redis: RedisClient, prefix: string, nowMs = Date.now()): Promise<Backlog> {
  const key = ownKeys.archive(prefix);
  const [entries, first] = await Promise.all([redis.xlen(key), redis.xrange(key, '-', '+', 'COUNT', 1)]);
  const id = first[0]?.[0];
  const oldestAgeSeconds = id ? Math.max(0, (nowMs - Number(id.split('-')[0])) / 1000) : 0;
  return { entries, oldestAgeSeconds };
}

/**
 * Drains the archive stream into PostgreSQL, behind the acknowledgement: a consumer group, so several
 * processes share the work, each batch written in one transaction and only then acknowledged and
 * deleted from the stream. A crash between the two leaves the entries pending: this archiver reads its
 * own pending entries first, and another takes over a stopped one's after `claimIdleMs`; writing an
 * entry again finds its row and adds nothing. While PostgreSQL is down the entries wait in Redis and
 * the archiver retries with a growing pause; the service answers as before.
 */
export function startArchiver(
  redis: RedisClient,
  pool: Pool,
  settings: ArchiverSettings,
  logger: Logger,
): RunningArchiver {
  const key = ownKeys.archive(settings.prefix);
  const consumer = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const known = new Set<string>();
  const resolveKeys = createKeyResolver(redis, settings.prefix);
  const reader = createStreamReader(redis, {
    key,
    group: GROUP,
    consumer,
    batchSize: settings.batchSize,
    claimIdleMs: settings.claimIdleMs,
  });
  const status: ArchiveState = { state: 'starting', written: 0 };
  let running = true;
  let wake: (() => void) | undefined;
  let lastRetention = 0;
  let markMigrated: () => void = () => undefined;
  const migrated = new Promise<void>((resolve) => (markMigrated = resolve));

  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  function failed(stage: string, err: unknown): void {
    status.state = 'down';
    status.errorClass = err instanceof UnknownKeyError ? 'key_unknown' : pgErrorClass(err);
    logger.repeated('error', `archive:${stage}`, `archive: ${stage} failed; entries wait in Redis`, {
      error: (err as Error).message,
      errorClass: status.errorClass,
    });
  }

  async function createGroup(): Promise<void> {
    await redis.xgroup('CREATE', key, GROUP, '0', 'MKSTREAM').catch((err: Error) => {
      if (!/BUSYGROUP/.test(err.message)) throw err;
    });
  }

  /** Retries until the schema is in place (PostgreSQL may be down at start: the service runs meanwhile). */
  async function migrateUntilDone(): Promise<void> {
    let delay = RETRY_MIN_MS;
    while (running) {
      try {
        const version = await migrate(pool);
        await createGroup();
        status.state = 'up';
        delete status.errorClass;
        logger.info('archive: schema ready', { schemaVersion: version });
        markMigrated();
        return;
      } catch (err) {
        failed('migration', err);
        await pause(delay);
        delay = Math.min(delay * 2, RETRY_MAX_MS);
      }
    }
  }

  async function retention(): Promise<void> {
    if (Date.now() - lastRetention < RETENTION_EVERY_MS) return;
    lastRetention = Date.now();
    const dropped = await dropMonthsBefore(pool, new Date(Date.now() - settings.retainDays * DAY_MS), known);
    if (dropped.length > 0) logger.info('archive: retention dropped whole months', { months: dropped });
  }

  async function loop(): Promise<void> {
    await migrateUntilDone();
    let delay = RETRY_MIN_MS;
    while (running) {
      let batch: StreamEntry[] = [];
      try {
        await retention();
        batch = await reader.next();
        if (batch.length === 0) continue;
        const sorted = sortEntries(batch);
        if (sorted.unreadable.length > 0)
          logger.error('archive: stream entries not understood, dropped', { entries: sorted.unreadable });
        await resolveKeys(sorted.notifications);
        const written = await writeBatch(pool, sorted, known);
        await redis
          .multi()
          .xack(key, GROUP, ...batch.map((e) => e.id))
          .xdel(key, ...batch.map((e) => e.id))
          .exec();
        status.written += written.notifications + written.replays + written.deliveries + written.expectations;
        status.state = 'up';
        delete status.errorClass;
        delay = RETRY_MIN_MS;
      } catch (err) {
        if (!running) break;
        reader.rewind();
        // The stream and its group were removed (FLUSHALL, a Redis that lost its data): made again.
        if (/NOGROUP/.test((err as Error).message)) {
          await createGroup().catch(() => undefined);
          continue;
        }
        failed(batch.length > 0 ? 'write' : 'read', err);
        await pause(delay);
        delay = Math.min(delay * 2, RETRY_MAX_MS);
      }
    }
  }

  const done = loop();
  return {
    state: () => ({ ...status }),
    migrated,
    async close() {
      running = false;
      wake?.();
      await done;
      markMigrated();
    },
  };
}
