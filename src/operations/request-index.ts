import type { Redis } from 'ioredis';

/**
 * Index from the platform's `request_id` to our event ids, so an operator can look an event up by the
 * id the platform and the merchant's systems know. Written by the fan-out worker, off the
 * acknowledgement path; kept as long as the de-duplication window.
 */
export function requestIndexKey(prefix: string, requestId: string): string {
  return `${prefix}:index:request_id:${requestId}`;
}

export function requestIdsOf(payload: unknown): string[] {
  if (typeof payload !== 'object' || payload === null) return [];
  const top = (payload as { request_id?: unknown }).request_id;
  const data = (payload as { data?: unknown }).data;
  const nested = typeof data === 'object' && data !== null ? (data as { request_id?: unknown }).request_id : undefined;
  return [...new Set([top, nested].filter((v): v is string => typeof v === 'string' && v.length > 0 && v.length <= 200))];
}

export async function indexRequestIds(redis: Redis, prefix: string, payload: unknown, eventId: string, ttlMs: number): Promise<void> {
  const ids = requestIdsOf(payload);
  if (ids.length === 0) return;
  const multi = redis.multi();
  for (const id of ids) multi.sadd(requestIndexKey(prefix, id), eventId).pexpire(requestIndexKey(prefix, id), ttlMs);
  await multi.exec();
}

export async function eventIdsForRequest(redis: Redis, prefix: string, requestId: string): Promise<string[]> {
  return (await redis.smembers(requestIndexKey(prefix, requestId))).sort();
}
