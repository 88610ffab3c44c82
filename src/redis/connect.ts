import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { Config } from '../config/schema';
import type { Logger } from '../logging/logger';
import { redisTarget, type RedisTarget } from '../config/redis-target';
import { loadRedisTls } from './tls';

/** A connection to whichever topology is configured; BullMQ and our scripts take either. */
export type RedisClient = Redis | Cluster;

/**
 * producer: the receiver's writes and admin reads; fails at once while Redis is unreachable so a
 * notification gets a prompt 503. worker: BullMQ workers block on Redis and must retry for ever.
 * operator: one-off CLI commands wait briefly, then fail, never hang.
 */
export type ConnectionRole = 'producer' | 'worker' | 'operator';

export interface RedisConnector {
  readonly target: RedisTarget;
  /** Where the connections go, without secrets, for logs and the CLI. */
  readonly description: string;
  open(role: ConnectionRole): RedisClient;
}

/**
 * For every role: a connection we drop has nothing left to flush. ioredis's disconnect() ends the
 * socket and arms a timer (2 s by default) that only the socket's next 'close' clears; a socket that
 * had already closed (Redis unreachable, or gone) never closes again, so the timer held the process
 * open for 2 s after its work (a CLI command against a Redis that is down, a test's teardown).
 */
const DROP_AT_ONCE: RedisOptions = { disconnectTimeout: 0 };

/** Per-connection behaviour by role; the same for one Redis, a sentinel-managed master or each cluster node. */
function roleOptions(
  role: ConnectionRole,
  enqueueTimeoutMs: number,
): { options: RedisOptions; reconnect: (times: number) => number | null } {
  const forever = (times: number) => Math.min(times * 100, 2000);
  switch (role) {
    case 'producer':
      return {
        options: {
          enableOfflineQueue: false,
          maxRetriesPerRequest: 1,
          // A stalled Redis must not pile up abandoned commands (each holding a body) for ever.
          commandTimeout: Math.max(enqueueTimeoutMs * 2, 1000),
        },
        reconnect: forever,
      };
    case 'operator':
      return {
        options: { maxRetriesPerRequest: 1, connectTimeout: 3000, commandTimeout: 10000 },
        reconnect: (times) => (times > 3 ? null : 300),
      };
    case 'worker':
      return { options: { maxRetriesPerRequest: null }, reconnect: forever };
  }
}

/**
 * Builds the one factory every connection of the service and the CLI comes from, for the topology
 * the configuration names. Reads the TLS files now, so a missing one stops start-up.
 */
export function createRedisConnector(config: Config): RedisConnector {
  const target = redisTarget(config);
  const tls = loadRedisTls(config, target);
  const auth = { username: target.username, password: target.password };
  return {
    target,
    description: target.description,
    open(role) {
      const { options: roleOnly, reconnect } = roleOptions(role, config.enqueueTimeoutMs);
      const perRole = { ...DROP_AT_ONCE, ...roleOnly };
      switch (target.kind) {
        case 'single':
          return new Redis({ ...target.node, db: target.db, ...auth, tls, ...perRole, retryStrategy: reconnect });
        case 'sentinel':
          return new Redis({
            sentinels: target.sentinels,
            name: target.masterName,
            sentinelPassword: target.sentinelPassword,
            ...auth,
            tls,
            enableTLSForSentinelMode: tls !== undefined,
            sentinelTLS: tls,
            // No `failoverDetector`: in ioredis 5 a +switch-master that arrives while the connection
            // is already re-resolving the master (its master died a moment before) cancels that
            // connect, and ioredis then ends the connection for good ("Connection is closed.", no
            // reconnect): the service stopped in about one Sentinel failover test run in six. A dead
            // master closes its connections, and Sentinel closes every client connection of the
            // nodes it reconfigures, so the connections re-ask the sentinels without it.
            ...perRole,
            retryStrategy: reconnect,
          });
        case 'cluster': {
          const { enableOfflineQueue, ...nodeOptions } = perRole;
          const options: ClusterOptions = {
            redisOptions: { ...auth, tls, ...nodeOptions },
            enableOfflineQueue,
            clusterRetryStrategy: reconnect,
            // Writes and reads go to masters: a replica may not have the latest job state yet.
            scaleReads: 'master',
            // Managed clusters (ElastiCache) announce names their certificates carry; resolving them
            // ourselves would make TLS check the certificate against an address.
            dnsLookup: tls ? (address, callback) => callback(null, address) : undefined,
          };
          return new Cluster(target.nodes, options);
        }
      }
    },
  };
}

/**
 * Resolves once the connection is ready: BullMQ waits like this itself; our own commands on a connection without an
 * offline queue must too.
 */
export function whenReady(connection: RedisClient): Promise<void> {
  if (connection.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => connection.once('ready', () => resolve()));
}

/**
 * Logs a connection's errors without flooding: while Redis is unreachable every connection reports
 * the same error on each reconnect, so each distinct error is a line per interval with a count.
 */
export function reportConnectionErrors(connection: RedisClient, logger: Logger, role: string): void {
  connection.on('error', (err: Error) =>
    logger.repeated('warn', `redis:${err.message}`, 'redis connection error', { role, error: err.message }),
  );
}
