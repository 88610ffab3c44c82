import { createHash } from 'node:crypto';
import type { Target } from '../model/target-schema';

/** Longest ordering key value kept as it is; a longer one is an error in the payload's shape, not a key. */
const MAX_KEY_LENGTH = 200;

/**
 * The event's ordering key for a target with `order`: the value at the dotted path in the platform's
 * body, or the `X-Merch-Id` header for `merchantId`. A string, a finite number or a boolean is a key
 * (numbers and booleans as their JSON text); anything else, or nothing, leaves the event unordered.
 */
export function orderingKeyOf(
  target: Pick<Target, 'order'>,
  payload: unknown,
  merchantId: string | undefined,
): string | undefined {
  const path = target.order?.key;
  if (path === undefined) return undefined;
  if (path === 'merchantId') return merchantId;
  let value: unknown = payload;
  for (const part of path.split('.')) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  const text =
    typeof value === 'string'
      ? value
      : typeof value === 'number' && Number.isFinite(value)
        ? String(value)
        : typeof value === 'boolean'
          ? String(value)
          : undefined;
  return text !== undefined && text.length > 0 && text.length <= MAX_KEY_LENGTH ? text : undefined;
}

/** A fixed-length, key-safe form of a key value, for the Redis key of its sequence. */
export function keyDigest(key: string): string {
  return createHash('sha1').update(key).digest('hex').slice(0, 24);
}
