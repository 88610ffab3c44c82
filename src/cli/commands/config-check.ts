import { stringify } from 'yaml';
import { loadPlatformKeys } from '../../config/keys';
import { loadConfigDetailed } from '../../config/load';
import { describeRedis, maskSecrets } from '../../config/describe';
import { configWarnings } from '../../config/warnings';
import { durabilityWarnings, inspectRedisDurability } from '../../operations/redis-durability';
import { createOperatorConnection } from '../../pipeline/connection';
import { describeSources } from '../operator-config';

type Out = (line: string) => void;

/** Asks the configured Redis how it keeps data; a Redis that cannot be asked is a warning, not a failure. */
async function redisWarnings(url: string, where: string): Promise<string[]> {
  const redis = createOperatorConnection(url);
  redis.on('error', () => undefined); // the failed command below reports it
  try {
    const durability = await inspectRedisDurability(redis);
    return durabilityWarnings(durability, where);
  } catch (err) {
    return [`could not ask Redis at ${where} about persistence and eviction (${(err as Error).message}): check appendonly yes and maxmemory-policy noeviction yourself`];
  } finally {
    redis.disconnect();
  }
}

/**
 * `config check`: reads the configuration exactly as the service would (a problem exits 78 with the
 * reasons), then prints it with secrets masked and what is valid but risky.
 */
export async function configCheckCommand(env: Record<string, string | undefined>, out: Out): Promise<number> {
  const loaded = loadConfigDetailed(env);
  const { config } = loaded;
  if (config.role !== 'worker') loadPlatformKeys(config.platformPublicKeys);
  out(`configuration is valid; ${describeSources(loaded)}`);
  out('');
  out('effective configuration (secrets masked):');
  out(stringify(maskSecrets(config)).trimEnd().replace(/^/gm, '  '));
  const warnings = [...configWarnings(config), ...(await redisWarnings(config.redisUrl, describeRedis(config)))];
  out('');
  out(warnings.length ? `${warnings.length} warning${warnings.length === 1 ? '' : 's'}:` : 'no warnings');
  for (const w of warnings) out(`  - ${w}`);
  return 0;
}
