import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { PostgresServer } from '../../src/demo/postgres-server';

/** A connection string to database `name` on the server at `url`. */
export function onDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

export async function withClient<T>(url: string, use: (db: Client) => Promise<T>): Promise<T> {
  const db = new Client({ connectionString: url });
  await db.connect();
  try {
    return await use(db);
  } finally {
    await db.end();
  }
}

/** Runs `use` on a fresh database (`label` and a random suffix) of the server at `serverUrl`, dropped after. */
export async function withFreshDatabase<T>(
  serverUrl: string,
  label: string,
  use: (url: string) => Promise<T>,
): Promise<T> {
  const database = `bench_${label}_${randomBytes(4).toString('hex')}`;
  await withClient(serverUrl, (db) => db.query(`CREATE DATABASE ${database}`));
  try {
    return await use(onDatabase(serverUrl, database));
  } finally {
    await withClient(serverUrl, (db) => db.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`));
  }
}

/**
 * Runs `use` against BENCH_PG_URL's server (`url`), or a throwaway one started here and removed after;
 * answers `skipped` with the reason when neither can be had.
 */
export async function withPostgresServer<T>(
  url: string | undefined,
  use: (serverUrl: string) => Promise<T>,
  skipped: (why: string) => T,
): Promise<T> {
  let server: PostgresServer | undefined;
  try {
    if (url === undefined) server = await PostgresServer.start();
  } catch (err) {
    return skipped(`no PostgreSQL: BENCH_PG_URL unset and ${(err as Error).message}`);
  }
  try {
    return await use(url ?? server!.url());
  } finally {
    await server?.stop('fast');
    await server?.remove();
  }
}
