import { Client } from 'pg';

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
