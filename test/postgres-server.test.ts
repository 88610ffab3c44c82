import { Client } from 'pg';
import { freshDatabase, PostgresServer } from './support/postgres';

async function query<T>(url: string, sql: string): Promise<T[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows as T[];
  } finally {
    await client.end();
  }
}

describe('the throwaway PostgreSQL the tests use', () => {
  it('gives each caller its own empty database on the suite server', async () => {
    const [a, b] = await Promise.all([freshDatabase('one'), freshDatabase('one')]);
    expect(a).not.toBe(b);
    await query(a, 'CREATE TABLE t (x int)');
    const tables = await query<{ n: string }>(b, "SELECT count(*) AS n FROM pg_tables WHERE tablename = 't'");
    expect(tables[0]?.n).toBe('0');
  });

  it('keeps its data across an immediate stop and a start on the same port', async () => {
    const server = await PostgresServer.start();
    try {
      await query(server.url(), 'CREATE TABLE kept (x int); INSERT INTO kept VALUES (7)');
      await server.stop('immediate');
      await expect(query(server.url(), 'SELECT 1')).rejects.toThrow();
      await server.start();
      const rows = await query<{ x: number }>(server.url(), 'SELECT x FROM kept');
      expect(rows).toEqual([{ x: 7 }]);
    } finally {
      await server.remove();
    }
  });
});
