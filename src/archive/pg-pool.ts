import { Pool, type PoolClient, type PoolConfig } from 'pg';
import { maskUrl } from '../logging/mask-url';

/** How long a connection attempt may take before the archive counts PostgreSQL as down. */
const CONNECT_TIMEOUT_MS = 3000;

/**
 * A node-postgres pool for a connection string, bounded so an unreachable PostgreSQL fails a query
 * within seconds instead of hanging it. An idle client's error (PostgreSQL restarted) is passed to
 * `onError` instead of crashing the process; the pool replaces the client.
 */
export function createPgPool(url: string, onError: (err: Error) => void, options: PoolConfig = {}): Pool {
  const pool = new Pool({
    connectionString: url,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    max: 4,
    ...options,
  });
  pool.on('error', onError);
  return pool;
}

/** Where a pool goes, without credentials, for logs, `config check`, the console and the API. */
export function describePg(url: string): string {
  return maskUrl(url);
}

/**
 * The SQLSTATE class of a PostgreSQL error (`08` connection exception, `57` operator intervention such
 * as a shutdown, `53` insufficient resources), or `network` for a socket that never reached it.
 */
export function pgErrorClass(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code.slice(0, 2);
  return 'network';
}

/** Whether PostgreSQL is unreachable or going away (worth waiting out), rather than refusing a statement. */
export function pgUnavailable(err: unknown): boolean {
  return ['network', '08', '57', '53'].includes(pgErrorClass(err));
}

/** Runs `work` in one transaction on one client: committed when it returns, rolled back when it throws. */
export async function inTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
