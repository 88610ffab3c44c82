import type { Pool } from 'pg';
import type { Config } from '../config/schema';
import type { Logger } from '../logging/logger';
import { keyPrefix } from '../model/names';
import type { RedisConnector } from '../redis/connect';
import { startArchiver, type RunningArchiver } from './archiver';
import { maskUrl } from '../logging/mask-url';
import { createPgPool } from '../postgres/pool';
import { ARCHIVE_POOL } from './pool-settings';

export interface OpenArchive {
  pool: Pool;
  /** Where it is, credentials masked. */
  description: string;
  /** The stream's drain; absent in a receiver-only process (workers drain it). */
  archiver?: RunningArchiver;
  close(): Promise<void>;
}

/**
 * The archive of a process whose configuration names one (ARCHIVE_URL): the pool every read and write
 * shares, and, where workers run, the archiver. Nothing here waits for PostgreSQL: the service starts
 * and answers while it is down, and the archiver migrates once it is back.
 */
export function openArchive(config: Config, redis: RedisConnector, logger: Logger): OpenArchive | undefined {
  const url = config.archive.url;
  if (url === undefined) return undefined;
  const description = maskUrl(url);
  const pg = createPgPool(url, {
    ...ARCHIVE_POOL,
    onIdleError: (err) =>
      logger.repeated('warn', 'archive:idle-client', 'archive: a PostgreSQL connection failed', {
        error: err.message,
      }),
  });
  const pool = pg.pool;
  logger.info('archive', { at: description, retainDays: config.archive.retainDays });
  let archiver: RunningArchiver | undefined;
  let connection: ReturnType<RedisConnector['open']> | undefined;
  if (config.role !== 'receiver') {
    connection = redis.open('worker');
    connection.on('error', () => undefined);
    archiver = startArchiver(
      connection,
      pool,
      {
        prefix: keyPrefix(config.queuePrefix),
        batchSize: config.archive.batchSize,
        claimIdleMs: config.archive.claimIdleMs,
        retainDays: config.archive.retainDays,
      },
      logger,
    );
  }
  return {
    pool,
    description,
    archiver,
    async close() {
      await archiver?.close();
      connection?.disconnect();
      await pg.close(ARCHIVE_POOL.timeoutMs);
    },
  };
}
