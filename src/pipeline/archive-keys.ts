import type { RedisClient } from '../redis/connect';
import { ownKeys } from '../model/names';

/** How long a published key is taken to be there: a Redis that lost its data gets it again within this. */
const REPUBLISH_MS = 60_000;

/**
 * Publishes each key that verifies a notification to the archive's key registry, so that archive
 * entries name the key by fingerprint instead of carrying its PEM every time. The write goes out on
 * the producer's connection before the ingest script that appends the first entry the key verified
 * (commands on one connection run in order), so the registry holds every key an entry names. A
 * failed write (Redis down) is tried again with the next notification; a Redis that lost its data
 * gets the key again within a minute, and the archiver waits for it meanwhile.
 */
export function createKeyPublisher(
  connection: RedisClient,
  prefix: string,
  clock: () => number = Date.now,
): (fingerprint: string, pem: string) => void {
  const key = ownKeys.archiveKeys(prefix);
  const publishedAt = new Map<string, number>();
  return (fingerprint, pem) => {
    const now = clock();
    const at = publishedAt.get(fingerprint);
    if (at !== undefined && now - at < REPUBLISH_MS) return;
    publishedAt.set(fingerprint, now);
    connection.hset(key, fingerprint, pem).catch(() => publishedAt.delete(fingerprint));
  };
}
