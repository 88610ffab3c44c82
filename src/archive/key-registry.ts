import type { RedisClient } from '../redis/connect';
import { ownKeys } from '../model/names';
import type { NewNotification } from './entries';

/**
 * Gives each notification row its key's PEM from the archive's key registry in Redis (fingerprint ->
 * PEM, published by the producers: pipeline/archive-keys.ts), remembered once read: a fingerprint
 * names one key for ever. A fingerprint the registry does not hold is left without a PEM; the batch's
 * write then finds it in the keys table or waits (write-batch.ts).
 */
export function createKeyResolver(
  redis: RedisClient,
  prefix: string,
): (rows: readonly NewNotification[]) => Promise<void> {
  const key = ownKeys.archiveKeys(prefix);
  const pems = new Map<string, string>();
  return async (rows) => {
    const missing = [
      ...new Set(
        rows.filter((r) => r.keyPem === undefined && !pems.has(r.keyFingerprint)).map((r) => r.keyFingerprint),
      ),
    ];
    if (missing.length > 0) {
      const found = await redis.hmget(key, ...missing);
      missing.forEach((fingerprint, i) => {
        const pem = found[i];
        if (pem) pems.set(fingerprint, pem);
      });
    }
    for (const row of rows) row.keyPem ??= pems.get(row.keyFingerprint);
  };
}
