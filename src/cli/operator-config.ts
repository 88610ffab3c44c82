import { describeRedis, redisTopologySetting } from '../config/describe';
import { loadConfigDetailed, type LoadedConfig, type SettingOrigin } from '../config/load';
import type { Config } from '../config/schema';
import { ServiceError } from '../model/errors';

export interface OperatorEnv {
  env: Record<string, string | undefined>;
  /** Where to say which Redis, prefix and file a command uses (stderr, so `--json` output stays clean). */
  err?: (line: string) => void;
}

/** A command that reads or changes queues was run on nothing but the defaults, by accident. */
export class DefaultsNotChosenError extends ServiceError {
  readonly code = 'defaults_not_chosen';
  readonly status = 400;
  constructor() {
    super(
      'this command reads and changes the queues in Redis, but none of CONFIG_FILE, the REDIS_* settings (REDIS_URL, ' +
        '…) or ' +
        'QUEUE_PREFIX is set, so it would act on the defaults (redis://127.0.0.1:6379, prefix whr). Set them as the ' +
        'service ' +
        'has them, or pass --defaults to use the defaults on purpose.',
    );
  }
}

function originText(origin: SettingOrigin): string {
  if (origin.kind === 'env') return origin.name;
  if (origin.kind === 'file') return 'CONFIG_FILE';
  return 'default';
}

/** The line every operator command starts with: which Redis, prefix and file it acts on, and why. */
export function describeSources(loaded: LoadedConfig): string {
  const { config, configFile, originOf } = loaded;
  return [
    `Redis ${describeRedis(config)} (${originText(originOf([redisTopologySetting(config)]))})`,
    `queue prefix ${config.queuePrefix} (${originText(originOf(['queuePrefix']))})`,
    `config file ${configFile ?? 'none'}`,
  ].join(', ');
}

/**
 * Reads the configuration for an operator command as a worker does (Redis and targets; no platform
 * keys needed). Refuses to run on the bare defaults unless asked to, since the wrong Redis or prefix
 * would show empty queues, or replay someone else's dead letters.
 */
export function operatorConfig(io: OperatorEnv, useDefaults: boolean): Config {
  const chosen = Object.keys(io.env).some(
    (name) => io.env[name] && (name === 'CONFIG_FILE' || name === 'QUEUE_PREFIX' || name.startsWith('REDIS_')),
  );
  if (!chosen && !useDefaults) throw new DefaultsNotChosenError();
  const loaded = loadConfigDetailed({ ...io.env, ROLE: 'worker' });
  io.err?.(`using ${describeSources(loaded)}`);
  return loaded.config;
}
