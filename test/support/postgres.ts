import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

export { PostgresServer } from '../../src/demo/postgres-server';

const made: string[] = [];

function suiteUrl(database = 'postgres'): string {
  const base = process.env.TEST_PG_URL;
  if (!base) throw new Error('TEST_PG_URL is not set: the suite starts its PostgreSQL in test/support/global-setup.ts');
  const url = new URL(base);
  url.pathname = `/${database}`;
  return url.toString();
}

async function onSuiteServer<T>(use: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: suiteUrl() });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

// Registered when a test file first imports this module, so each database a file made is dropped after
// its last test, passed or not.
afterAll(async () => {
  const names = made.splice(0);
  if (names.length === 0) return;
  await onSuiteServer(async (client) => {
    for (const name of names) await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  });
});

/**
 * A new, empty database on the suite's throwaway PostgreSQL (see global-setup.ts), dropped after the
 * test file's last test. Returns its connection string. A test that stops PostgreSQL starts its own
 * `PostgresServer` instead.
 */
export async function freshDatabase(prefix = 'test'): Promise<string> {
  const name = `${prefix.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}_${randomBytes(4).toString('hex')}`;
  await onSuiteServer((client) => client.query(`CREATE DATABASE "${name}"`));
  made.push(name);
  return suiteUrl(name);
}
