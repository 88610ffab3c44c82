import type { Redis } from 'ioredis';
import { whenReady } from './connection';
import { ownKeys } from './names';

/**
 * Index from the platform's `request_id` to our event ids, so an operator can look an event up by the
 * id the platform and the merchant's systems know. Written at fan-out, off the acknowledgement path;
 * kept as long as the de-duplication window.
 */
export function requestIdsOf(payload: unknown): string[] {
  if (typeof payload !== 'object' || payload === null) return [];
  const top = (payload as { request_id?: unknown }).request_id;
  const data = (payload as { data?: unknown }).data;
  const nested = typeof data === 'object' && data !== null ? (data as { request_id?: unknown }).request_id : undefined;
  return [...new Set([top, nested].filter((v): v is string => typeof v === 'string' && v.length > 0 && v.length <= 200))];
}

// One script call: a MULTI on a BullMQ connection copies its dozens of Lua commands onto each
// pipeline object, which showed up in the drain profile.
const INDEX = `for i, key in ipairs(KEYS) do
  redis.call('SADD', key, ARGV[1])
  redis.call('PEXPIRE', key, ARGV[2])
end`;

export async function indexRequestIds(redis: Redis, prefix: string, payload: unknown, eventId: string, ttlMs: number): Promise<void> {
  const ids = requestIdsOf(payload);
  if (ids.length === 0) return;
  await whenReady(redis);
  await redis.eval(INDEX, ids.length, ...ids.map((id) => ownKeys.requestIndex(prefix, id)), eventId, String(ttlMs));
}

export async function eventIdsForRequest(redis: Redis, prefix: string, requestId: string): Promise<string[]> {
  return (await redis.smembers(ownKeys.requestIndex(prefix, requestId))).sort();
}
