import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import { ConfigError } from '../config/errors';
import type { Config } from '../config/schema';
import type { RedisTarget } from '../config/redis-target';

/** The TLS options for every connection, or undefined for plain TCP; an unreadable file is a config error. */
export function loadRedisTls(config: Config, target: RedisTarget): ConnectionOptions | undefined {
  if (!target.tls) return undefined;
  const problems: string[] = [];
  const read = (file: string | undefined, setting: string): Buffer | undefined => {
    if (file === undefined) return undefined;
    try {
      return readFileSync(file);
    } catch (err) {
      problems.push(`${setting}: cannot read ${file} (${(err as Error).message})`);
      return undefined;
    }
  };
  const tls: ConnectionOptions = {
    ca: read(config.redisTlsCaFile, 'redisTlsCaFile (REDIS_TLS_CA_FILE)'),
    cert: read(config.redisTlsCertFile, 'redisTlsCertFile (REDIS_TLS_CERT_FILE)'),
    key: read(config.redisTlsKeyFile, 'redisTlsKeyFile (REDIS_TLS_KEY_FILE)'),
  };
  if (problems.length) throw new ConfigError(problems);
  return tls;
}
