import { Cluster, type Redis } from 'ioredis';
import type { RedisClient } from '../redis/connect';

export interface RedisDurability {
  maxmemoryPolicy: string;
  aof: boolean;
  rdb: boolean;
  /** What could lose an acknowledged notification. */
  risks: ('eviction_policy' | 'no_persistence')[];
}

function infoField(info: string, field: string): string | undefined {
  return new RegExp(`^${field}:(.*)$`, 'm').exec(info)?.[1]?.trim();
}

/**
 * Reads how Redis keeps data. An eviction policy other than noeviction can delete queued jobs
 * under memory pressure, and a Redis that persists nothing loses them on restart: either can lose
 * an event we already acknowledged.
 */
export async function checkRedisDurability(redis: RedisClient): Promise<RedisDurability> {
  // In a cluster every master holds part of the data (ours sits on one, but which one moves).
  const nodes = redis instanceof Cluster ? redis.nodes('master') : [redis];
  const each = await Promise.all(nodes.map(checkNode));
  return {
    maxmemoryPolicy: [...new Set(each.map((d) => d.maxmemoryPolicy))].join(','),
    aof: each.every((d) => d.aof),
    rdb: each.every((d) => d.rdb),
    risks: [...new Set(each.flatMap((d) => d.risks))],
  };
}

async function checkNode(redis: Redis): Promise<RedisDurability> {
  const [memory, persistence] = await Promise.all([redis.info('memory'), redis.info('persistence')]);
  const maxmemoryPolicy = infoField(memory, 'maxmemory_policy') ?? 'unknown';
  const aof = infoField(persistence, 'aof_enabled') === '1';
  let rdb = false;
  try {
    const save = (await redis.config('GET', 'save')) as string[];
    rdb = Boolean(save[1]?.trim());
  } catch {
    // CONFIG is often disabled on managed Redis; judge by AOF alone there
    rdb = infoField(persistence, 'rdb_last_save_time') !== undefined && !aof;
  }
  const risks: RedisDurability['risks'] = [];
  if (maxmemoryPolicy !== 'noeviction') risks.push('eviction_policy');
  if (!aof && !rdb) risks.push('no_persistence');
  return { maxmemoryPolicy, aof, rdb, risks };
}
