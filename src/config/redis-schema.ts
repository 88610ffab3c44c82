import { z } from 'zod';

/** `host:port`, the host a name, an IPv4 address or a bracketed IPv6 address (`[::1]:26379`). */
const hostPort = z
  .string()
  .regex(/^(\[[0-9A-Fa-f:.]+\]|[^\s:[\]]+):\d{1,5}$/, 'must be host:port')
  .transform((s) => {
    const at = s.lastIndexOf(':');
    return { host: s.slice(0, at).replace(/^\[(.*)\]$/, '$1'), port: Number(s.slice(at + 1)) };
  });

export type HostPort = z.output<typeof hostPort>;

/**
 * Which Redis the service uses and how it authenticates. One topology: `redisUrl` (single), or
 * `redisSentinels` + `redisSentinelMaster`, or `redisClusterNodes`. docs/deploy.md explains each.
 */
export const redisSettingsShape = {
  /** A single Redis (`redis://` or `rediss://` for TLS); ignored when sentinels or cluster nodes are set. */
  redisUrl: z.string().regex(/^rediss?:\/\//, 'must start with redis:// or rediss://'),
  /** ACL user and password, for every topology; they override those in `redisUrl`. */
  redisUsername: z.string().min(1).optional(),
  redisPassword: z.string().min(1).optional(),
  /** TLS for Sentinel and Cluster (a single Redis turns it on with `rediss://`); any TLS file turns it on too. */
  redisTls: z.boolean().optional(),
  /** PEM files: a private CA to trust, and a client certificate and key for mutual TLS. */
  redisTlsCaFile: z.string().min(1).optional(),
  redisTlsCertFile: z.string().min(1).optional(),
  redisTlsKeyFile: z.string().min(1).optional(),
  /** Sentinels to ask for the current master (any of them; each `host:port`). */
  redisSentinels: z.array(hostPort).optional(),
  /** The master's name as the sentinels know it (`sentinel monitor <name> …`). */
  redisSentinelMaster: z.string().min(1).optional(),
  /** The sentinels' own password (`requirepass` of the sentinels), when they have one. */
  redisSentinelPassword: z.string().min(1).optional(),
  /** Cluster nodes to discover the cluster from: any subset of its nodes, each `host:port`. */
  redisClusterNodes: z.array(hostPort).optional(),
  /**
   * When ≥ 1, a notification is acknowledged only after Redis confirms (WAIT) that this many
   * replicas hold its write; otherwise 503 and the platform retries. @defaultValue 0
   */
  redisMinReplicasAck: z.number().int().min(0).max(16),
};

type RedisSettingsInput = z.output<z.ZodObject<typeof redisSettingsShape>>;

/** The rules between the Redis settings; each problem names the settings as an operator writes them. */
export function checkRedisSettings(c: RedisSettingsInput, ctx: z.RefinementCtx): void {
  const sentinels = (c.redisSentinels ?? []).length > 0;
  const cluster = (c.redisClusterNodes ?? []).length > 0;
  const problem = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
  if (sentinels && cluster) {
    problem(
      'redisClusterNodes',
      'set at most one of REDIS_SENTINELS (redisSentinels) and REDIS_CLUSTER_NODES (redisClusterNodes)',
    );
  }
  if (sentinels && !c.redisSentinelMaster)
    problem('redisSentinelMaster', 'REDIS_SENTINEL_MASTER (redisSentinelMaster) is required with REDIS_SENTINELS');
  if (!sentinels && c.redisSentinelMaster)
    problem('redisSentinelMaster', 'applies only with REDIS_SENTINELS (redisSentinels)');
  if (!sentinels && c.redisSentinelPassword)
    problem('redisSentinelPassword', 'applies only with REDIS_SENTINELS (redisSentinels)');
  if ((c.redisTlsCertFile === undefined) !== (c.redisTlsKeyFile === undefined)) {
    problem('redisTlsKeyFile', 'REDIS_TLS_CERT_FILE and REDIS_TLS_KEY_FILE go together');
  }
}
