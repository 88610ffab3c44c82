import { Redis } from 'ioredis';
import type { Logger } from '../logging/logger';

/**
 * Logs a connection's errors without flooding: while Redis is unreachable every connection reports
 * the same error on each reconnect, so each distinct error is a line per interval with a count.
 */
export function reportConnectionErrors(connection: Redis, logger: Logger, role: string): void {
  connection.on('error', (err) => logger.repeated('warn', `redis:${err.message}`, 'redis connection error', { role, error: err.message }));
}

/**
 * A connection for producers and admin reads. Commands fail at once while Redis is unreachable
 * (no offline queue), so a notification gets a prompt 503 instead of waiting; ioredis keeps
 * reconnecting in the background and the service recovers by itself.
 */
export function createProducerConnection(url: string, commandTimeoutMs = 5000): Redis {
  return new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    // A stalled Redis must not pile up abandoned commands (each holding a body) for ever.
    commandTimeout: Math.max(commandTimeoutMs * 2, 1000),
    retryStrategy: (times) => Math.min(times * 100, 2000),
  });
}

/** A connection for one-off operator commands (CLI): waits briefly for Redis, then fails, never hangs. */
export function createOperatorConnection(url: string): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: 1,
    connectTimeout: 3000,
    commandTimeout: 10000,
    retryStrategy: (times) => (times > 3 ? null : 300),
  });
}

/** Resolves once the connection is ready: BullMQ waits like this itself; our own commands on a connection without an offline queue must too. */
export function whenReady(connection: Redis): Promise<void> {
  if (connection.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => connection.once('ready', () => resolve()));
}

/** A connection for BullMQ workers, which block on Redis and must retry forever. */
export function createWorkerConnection(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, retryStrategy: (times) => Math.min(times * 100, 2000) });
}
