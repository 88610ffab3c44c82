import type { Redis } from 'ioredis';

export interface RedisDurability {
  appendonly: string;
  /** RDB save points, `''` when none; undefined when Redis would not say (CONFIG disabled). */
  save?: string;
  maxmemoryPolicy: string;
  /** How we found out: CONFIG GET, or INFO where a managed Redis disables CONFIG. */
  via: 'CONFIG GET' | 'INFO';
}

function infoField(info: string, field: string): string | undefined {
  return new RegExp(`^${field}:(.*)$`, 'm').exec(info)?.[1]?.trim();
}

/** Asks Redis how it keeps data: AOF, snapshots, and what it does when memory is full. */
export async function inspectRedisDurability(redis: Redis): Promise<RedisDurability> {
  try {
    const read = async (name: string) => ((await redis.call('CONFIG', 'GET', name)) as string[])[1] ?? '';
    return {
      appendonly: await read('appendonly'),
      save: await read('save'),
      maxmemoryPolicy: await read('maxmemory-policy'),
      via: 'CONFIG GET',
    };
  } catch {
    // Managed Redis (ElastiCache, Memorystore, Azure) often renames or disables CONFIG; INFO still answers.
    const persistence = await redis.info('persistence');
    const memory = await redis.info('memory');
    return {
      appendonly: infoField(persistence, 'aof_enabled') === '1' ? 'yes' : 'no',
      maxmemoryPolicy: infoField(memory, 'maxmemory_policy') ?? 'unknown',
      via: 'INFO',
    };
  }
}

/** What an operator should change so that an acknowledged notification cannot vanish from Redis. */
export function durabilityWarnings(d: RedisDurability, where: string): string[] {
  const warnings: string[] = [];
  if (d.appendonly !== 'yes') {
    if (d.save === '')
      warnings.push(
        `Redis at ${where} has no persistence (appendonly no, no save points): a restart loses every queued ` +
          `notification, acknowledged or not; set appendonly yes`,
      );
    else
      warnings.push(
        `Redis at ${where} does not use AOF (appendonly no${d.save ? `, snapshots: save ${d.save}` : ''}): a crash ` +
          `loses what was acknowledged since the last snapshot; set appendonly yes (or the provider's durable option)`,
      );
  }
  if (d.maxmemoryPolicy !== 'noeviction') {
    warnings.push(
      `Redis at ${where} has maxmemory-policy ${d.maxmemoryPolicy}: when memory is full it deletes keys, i.e. queued ` +
        `notifications and de-duplication records; set noeviction`,
    );
  }
  return warnings;
}
