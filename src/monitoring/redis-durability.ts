import { Cluster, type Redis } from 'ioredis';
import type { RedisClient } from '../redis/connect';

/** What could lose an acknowledged notification: keys deleted under memory pressure, or nothing kept on disk. */
export type DurabilityRisk = 'eviction_policy' | 'no_persistence';

/** How one Redis (one master of a cluster) keeps data: the one verdict /metrics, /readyz and `config check` give. */
export interface RedisDurability {
  /** The node, as `host:port`. */
  node: string;
  aof: boolean;
  /** RDB save points, `''` when none; undefined when Redis would not say (CONFIG refused, as managed Redis does). */
  save: string | undefined;
  maxmemoryPolicy: string;
  /** Save points that cannot be read do not count as persistence: a Redis refusing CONFIG must prove it by AOF. */
  risks: DurabilityRisk[];
}

function infoField(info: string, field: string): string | undefined {
  return new RegExp(`^${field}:(.*)$`, 'm').exec(info)?.[1]?.trim();
}

async function nodeDurability(redis: Redis): Promise<RedisDurability> {
  const [memory, persistence] = await Promise.all([redis.info('memory'), redis.info('persistence')]);
  const maxmemoryPolicy = infoField(memory, 'maxmemory_policy') ?? 'unknown';
  const aof = infoField(persistence, 'aof_enabled') === '1';
  // INFO has no save points (rdb_last_save_time is there with or without them): only CONFIG tells.
  const save = await redis.call('CONFIG', 'GET', 'save').then(
    (reply) => (reply as string[])[1]?.trim() ?? '',
    () => undefined,
  );
  const risks: DurabilityRisk[] = [];
  if (maxmemoryPolicy !== 'noeviction') risks.push('eviction_policy');
  if (!aof && !save) risks.push('no_persistence');
  return { node: `${redis.options.host ?? '?'}:${redis.options.port ?? '?'}`, aof, save, maxmemoryPolicy, risks };
}

/** Asks every master how it keeps data (in a cluster each holds part of it; ping waits for the cluster to be known). */
export async function checkRedisDurability(redis: RedisClient): Promise<RedisDurability[]> {
  if (!(redis instanceof Cluster)) return [await nodeDurability(redis)];
  await redis.ping();
  return Promise.all(redis.nodes('master').map(nodeDurability));
}

/** The risks of any node. */
export function durabilityRisks(nodes: readonly RedisDurability[]): DurabilityRisk[] {
  return [...new Set(nodes.flatMap((d) => d.risks))];
}

/** What an operator should change so that an acknowledged notification cannot vanish from Redis at `where`. */
export function durabilityWarnings(d: RedisDurability, where: string): string[] {
  const warnings: string[] = [];
  if (d.risks.includes('no_persistence'))
    warnings.push(
      d.save === undefined
        ? `Redis at ${where} does not use AOF (appendonly no) and will not say whether it snapshots (CONFIG ` +
            'refused): unless your provider keeps snapshots, a restart loses every queued notification; set ' +
            "appendonly yes (or the provider's durable option)"
        : `Redis at ${where} has no persistence (appendonly no, no save points): a restart loses every queued ` +
            'notification, acknowledged or not; set appendonly yes',
    );
  else if (!d.aof)
    warnings.push(
      `Redis at ${where} does not use AOF (appendonly no, snapshots: save ${d.save}): a crash loses what was ` +
        "acknowledged since the last snapshot; set appendonly yes (or the provider's durable option)",
    );
  if (d.risks.includes('eviction_policy'))
    warnings.push(
      `Redis at ${where} has maxmemory-policy ${d.maxmemoryPolicy}: when memory is full it deletes keys, i.e. ` +
        'queued notifications and de-duplication records; set noeviction',
    );
  return warnings;
}
