import { Redis } from 'ioredis';

/**
 * A connection for producers and admin reads. Commands fail at once while Redis is unreachable
 * (no offline queue), so a notification gets a prompt 503 instead of waiting; ioredis keeps
 * reconnecting in the background and the service recovers by itself.
 */
export function createProducerConnection(url: string): Redis {
  return new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    retryStrategy: (times) => Math.min(times * 100, 2000),
  });
}

/** A connection for BullMQ workers, which block on Redis and must retry forever. */
export function createWorkerConnection(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, retryStrategy: (times) => Math.min(times * 100, 2000) });
}
