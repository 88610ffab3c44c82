import type { RedisClient } from '../redis/connect';
import type { StreamEntry } from './entries';

const BLOCK_MS = 1000;

export interface StreamReaderSettings {
  key: string;
  group: string;
  consumer: string;
  batchSize: number;
  /** How long another consumer's entry may stay pending before this reader takes it over. */
  claimIdleMs: number;
}

export interface StreamReader {
  /** The next batch: this consumer's own pending entries first, then others' stale ones, then new ones. */
  next(): Promise<StreamEntry[]>;
  /**
   * After a batch was not written: the batch read ahead is dropped (its entries stay pending here) and
   * reading starts again from this consumer's pending entries, so nothing is skipped.
   */
  rewind(): void;
}

/**
 * Reads the archive stream for one consumer of the group, one batch ahead: while a batch is written
 * to PostgreSQL, the next one is already on its way from Redis. Only new entries are read ahead (its
 * own pending entries would include the batch being written), and without blocking, since a blocked
 * read would hold the connection the batch's acknowledgement needs.
 */
export function createStreamReader(redis: RedisClient, s: StreamReaderSettings): StreamReader {
  let recovering = true;
  let claimedAt = 0;
  let ahead: Promise<StreamEntry[]> | undefined;

  async function readGroup(args: (string | number)[]): Promise<StreamEntry[]> {
    const reply = (await redis.call('XREADGROUP', 'GROUP', s.group, s.consumer, 'COUNT', s.batchSize, ...args)) as
      [string, [string, string[] | null][]][] | null;
    return entriesOf(reply?.[0]?.[1] ?? []);
  }

  async function claim(): Promise<StreamEntry[]> {
    claimedAt = Date.now();
    const reply = (await redis.xautoclaim(s.key, s.group, s.consumer, s.claimIdleMs, '0-0', 'COUNT', s.batchSize)) as [
      string,
      [string, string[]][],
    ];
    return entriesOf(reply[1]);
  }

  const readNew = (block: boolean) => readGroup([...(block ? ['BLOCK', BLOCK_MS] : []), 'STREAMS', s.key, '>']);

  async function read(): Promise<StreamEntry[]> {
    if (recovering) {
      const own = await readGroup(['STREAMS', s.key, '0']);
      if (own.length > 0) return own;
      recovering = false;
    }
    // Others' stale entries are looked for when idle, and at least once per claim period under load.
    if (Date.now() - claimedAt >= s.claimIdleMs) {
      const taken = await claim();
      if (taken.length > 0) return taken;
    }
    const fresh = await readNew(false);
    if (fresh.length > 0) return fresh;
    const taken = await claim();
    if (taken.length > 0) return taken;
    return readNew(true);
  }

  return {
    async next() {
      const prefetched = ahead;
      ahead = undefined;
      const batch = (await prefetched) ?? [];
      const entries = batch.length > 0 ? batch : await read();
      if (!recovering && entries.length > 0) {
        ahead = readNew(false);
        // A failed read ahead surfaces at the next call; until then it must not count as unhandled.
        ahead.catch(() => undefined);
      }
      return entries;
    },
    rewind() {
      ahead = undefined;
      recovering = true;
    },
  };
}

/**
 * XREADGROUP's and XAUTOCLAIM's entries as id and fields; a pending entry already deleted comes back
 * without fields and is skipped.
 */
function entriesOf(raw: [string, string[] | null][]): StreamEntry[] {
  const entries: StreamEntry[] = [];
  for (const [id, list] of raw) {
    if (!list) continue;
    const fields: Record<string, string> = {};
    for (let i = 0; i + 1 < list.length; i += 2) fields[list[i] as string] = list[i + 1] as string;
    entries.push({ id, fields });
  }
  return entries;
}
