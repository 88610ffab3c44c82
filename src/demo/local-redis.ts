import { Redis } from 'ioredis';

/** Deletes the demo's own keys (prefix `<prefix>:`), so each demo run starts from empty queues. */
export async function resetPrefix(url: string, prefix: string): Promise<number> {
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  let deleted = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) deleted += await client.del(...keys);
    } while (cursor !== '0');
  } finally {
    client.disconnect();
  }
  return deleted;
}
