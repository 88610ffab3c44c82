import type { Config } from './schema';
import type { HostPort } from './redis-schema';

interface Auth {
  username?: string;
  password?: string;
  /** TLS was asked for: `rediss://`, `redisTls` or a TLS file. */
  tls: boolean;
}

/** The topology the configuration names, with credentials resolved; `description` has no secrets. */
export type RedisTarget = Auth & { description: string } & (
    | { kind: 'single'; node: HostPort; db: number }
    | { kind: 'sentinel'; sentinels: HostPort[]; masterName: string; sentinelPassword?: string }
    | { kind: 'cluster'; nodes: HostPort[] }
  );

const list = (nodes: readonly HostPort[]) =>
  nodes.map((n) => (n.host.includes(':') ? `[${n.host}]:${n.port}` : `${n.host}:${n.port}`)).join(',');

export function redisTarget(config: Config): RedisTarget {
  const tlsFiles = Boolean(config.redisTlsCaFile || config.redisTlsCertFile);
  const explicit = { username: config.redisUsername, password: config.redisPassword };
  if (config.redisSentinels?.length && config.redisSentinelMaster) {
    const tls = config.redisTls === true || tlsFiles;
    return {
      kind: 'sentinel',
      sentinels: config.redisSentinels,
      masterName: config.redisSentinelMaster,
      sentinelPassword: config.redisSentinelPassword,
      ...explicit,
      tls,
      description:
        `sentinel master "${config.redisSentinelMaster}" via ` + `${list(config.redisSentinels)}${tls ? ' (TLS)' : ''}`,
    };
  }
  if (config.redisClusterNodes?.length) {
    const tls = config.redisTls === true || tlsFiles;
    return {
      kind: 'cluster',
      nodes: config.redisClusterNodes,
      ...explicit,
      tls,
      description: `cluster via ${list(config.redisClusterNodes)}${tls ? ' (TLS)' : ''}`,
    };
  }
  const url = new URL(config.redisUrl);
  const tls = url.protocol === 'rediss:' || config.redisTls === true || tlsFiles;
  const node = { host: url.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1', port: Number(url.port || 6379) };
  const db = Number(url.pathname.slice(1) || 0);
  // Settings win over credentials written into the URL, so a secret can come from its own variable.
  const username = explicit.username ?? (url.username ? decodeURIComponent(url.username) : undefined);
  const password = explicit.password ?? (url.password ? decodeURIComponent(url.password) : undefined);
  const credentials = username || password ? `${username ?? ''}${password ? ':***' : ''}@` : '';
  const shown = `${tls ? 'rediss' : 'redis'}://${credentials}${list([node])}${db ? `/${db}` : ''}`;
  return { kind: 'single', node, db, username, password, tls, description: shown };
}
