import { maskUrl } from '../logging/mask-url';
import { redisTarget } from './redis-target';
import type { Config } from './schema';

const MASK = '***';
/** Setting names whose values are secrets, whatever part of the configuration they sit in. */
const SECRET_KEY = /password|secret|token|apikey|credential/i;

/**
 * A copy of the configuration fit to print: secrets (by setting name, so settings added later are
 * covered too), every static header value (they usually carry credentials) and URL passwords masked.
 */
export function maskSecrets(value: unknown, key = ''): unknown {
  if (SECRET_KEY.test(key) && value !== undefined) return Array.isArray(value) ? value.map(() => MASK) : MASK;
  if (Array.isArray(value)) return value.map((v) => maskSecrets(v));
  if (typeof value === 'string') return /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? maskUrl(value) : value;
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, key === 'headers' ? MASK : maskSecrets(v, k)]));
}

/**
 * Which Redis the configuration points at (the URL, the sentinels and master name, or the cluster nodes), without
 * secrets.
 */
export function describeRedis(config: Config): string {
  return redisTarget(config).description;
}

/** The setting that chose the topology, for saying where it came from. */
export function redisTopologySetting(config: Config): 'redisSentinels' | 'redisClusterNodes' | 'redisUrl' {
  if (config.redisSentinels?.length) return 'redisSentinels';
  if (config.redisClusterNodes?.length) return 'redisClusterNodes';
  return 'redisUrl';
}
