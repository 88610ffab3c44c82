import { createHash } from 'node:crypto';
import path from 'node:path';
import { loadLua } from '../redis/lua';
import type { RedisClient } from '../redis/connect';
import { ownKeys } from '../model/names';

/**
 * Index from the platform's `request_id` to our event ids, so an operator can look an event up by the
 * id the platform and the merchant's systems know. Written by the ingest script with the event's jobs;
 * kept as long as the de-duplication window.
 *
 * Entries live in small hashes, one per (UTC day, shard of the request id), each expiring a
 * de-duplication window after its day ends: a small hash is stored packed (listpack), about 60 B per
 * entry, where a key of its own per request id costs 120 B as a string and 248 B as a set (MEMORY
 * USAGE). Look-ups read the request id's shard of every day still inside the window.
 */
export function requestIdsOf(payload: unknown): string[] {
  if (typeof payload !== 'object' || payload === null) return [];
  const top = (payload as { request_id?: unknown }).request_id;
  const data = (payload as { data?: unknown }).data;
  const nested = typeof data === 'object' && data !== null ? (data as { request_id?: unknown }).request_id : undefined;
  return [
    ...new Set([top, nested].filter((v): v is string => typeof v === 'string' && v.length > 0 && v.length <= 200)),
  ];
}

const DAY_MS = 86_400_000;
/**
 * Shards per day: few enough that a bucket holds dozens of entries at a few notifications a second
 * (packed while under Redis's `hash-max-listpack-entries`, 128 by default), enough that one stays
 * small at a hundred a second.
 */
const SHARDS = 1024;

function shardOf(requestId: string): number {
  return createHash('sha1').update(requestId).digest().readUInt16BE(0) % SHARDS;
}

/** The hash holding a request id's entry for events indexed on the day of `atMs`. */
export function requestIndexBucket(prefix: string, requestId: string, atMs: number): string {
  return ownKeys.requestIndex(prefix, Math.floor(atMs / DAY_MS), shardOf(requestId));
}

/**
 * The index entries of an event (one per request id of its payload, and `also`: the request_id at the
 * path its event type's expectations read, where that is elsewhere), written by the ingest script.
 */
export function requestIndexEntries(
  prefix: string,
  payload: unknown,
  ttlMs: number,
  also?: string,
  nowMs = Date.now(),
): { expiresAtMs: number; entries: { key: string; requestId: string }[] } | undefined {
  const ids = requestIdsOf(payload);
  if (also !== undefined && !ids.includes(also)) ids.push(also);
  if (ids.length === 0) return undefined;
  // The bucket outlives the last entry of its day by the window.
  const expiresAtMs = (Math.floor(nowMs / DAY_MS) + 1) * DAY_MS + ttlMs;
  return {
    expiresAtMs,
    entries: ids.map((requestId) => ({ key: requestIndexBucket(prefix, requestId, nowMs), requestId })),
  };
}

const LOOK_UP = loadLua(path.join(__dirname, 'lua'), 'request-index-lookup');

/** The request id's bucket of every day still inside the de-duplication window (`ttlMs`), today's first. */
export function requestIndexBuckets(prefix: string, requestId: string, ttlMs: number, nowMs = Date.now()): string[] {
  const days = Math.ceil(ttlMs / DAY_MS) + 1;
  return Array.from({ length: days }, (_, i) => requestIndexBucket(prefix, requestId, nowMs - i * DAY_MS));
}

export async function eventIdsForRequest(
  redis: RedisClient,
  prefix: string,
  requestId: string,
  ttlMs: number,
  nowMs = Date.now(),
): Promise<string[]> {
  const buckets = requestIndexBuckets(prefix, requestId, ttlMs, nowMs);
  const found = (await redis.eval(LOOK_UP, buckets.length, ...buckets, requestId)) as string[];
  return [...new Set(found.flatMap((ids) => ids.split(',')))].sort();
}
