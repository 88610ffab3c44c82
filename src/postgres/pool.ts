import type { Pool, PoolClient } from 'pg';
import { pg } from './driver';
import { settlesWithin } from '../model/with-timeout';

/** The most connections one pool opens, whatever concurrency asks for: a database's own limit is often 100. */
export const MAX_POOL_SIZE = 32;

export interface PgPoolOptions {
  /** Connections at most (capped at {@link MAX_POOL_SIZE}). */
  size: number;
  /** Opening a connection gives up after this long, and so does waiting for a statement's answer. */
  timeoutMs: number;
  /** Waiting for a statement's answer gives up after this long instead; 0: never (long reads, migrations). */
  statementTimeoutMs?: number;
  /** Told once per error of an idle connection (the server restarted, the network dropped it). */
  onIdleError?: (err: Error) => void;
}

/** A pool whose `close` ends within a bound, even when the server no longer answers. */
export interface PgPool {
  readonly pool: Pool;
  /** Ends every connection: politely within `ms`, then by destroying the sockets left. */
  close(ms: number): Promise<void>;
}

/**
 * A small pool of connections to one database, opened on demand (a server that is down stops nothing
 * from starting), with the error of an idle connection handled (unhandled, it would end the process).
 */
export function createPgPool(url: string, options: PgPoolOptions): PgPool {
  const pool = new (pg().Pool)({
    connectionString: url,
    max: Math.max(1, Math.min(MAX_POOL_SIZE, options.size)),
    connectionTimeoutMillis: options.timeoutMs,
    // A server that stops answering mid-statement: the client gives up and the pool drops that connection.
    query_timeout: options.statementTimeoutMs ?? options.timeoutMs,
    idleTimeoutMillis: 30_000,
    application_name: 'webhook-receiver',
  });
  const clients = new Set<PoolClient>();
  pool.on('connect', (client) => clients.add(client));
  pool.on('remove', (client) => clients.delete(client));
  pool.on('error', (err) => options.onIdleError?.(err));
  return {
    pool,
    async close(ms) {
      const ending = pool.end();
      if (await settlesWithin(ending, ms)) return;
      // A server that stopped answering never acknowledges the goodbye: cut what is left.
      for (const client of clients) client.connection.stream.destroy();
      await settlesWithin(ending, ms);
    },
  };
}
