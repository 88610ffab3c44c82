import { ConfigError } from '../config/errors';
import { loadEnvironments } from '../config/keys';
import { loadConfig } from '../config/load';
import type { Config } from '../config/schema';
import type { RunningWorkers } from '../forwarding/workers';
import { writeAudit, type Actor } from '../logging/audit';
import type { Logger } from '../logging/logger';
import type { QueueRegistry } from '../pipeline/queue-registry';
import { ServiceError } from '../model/errors';
import { transformProblems } from '../transform/check';
import { checkPostgresTables } from '../forwarding/destinations/postgres-table';

export interface ReloadResult {
  added: string[];
  removed: string[];
  changed: string[];
  /** Other settings that differ from the running ones: not applied, they take a restart. */
  needsRestart: string[];
}

/** The file (with the environment) does not load: nothing was applied. 400 on the API. */
export class ReloadRefusedError extends ServiceError {
  readonly code = 'invalid_config';
  readonly status = 400;
  constructor(readonly problems: string[]) {
    super(`configuration not reloaded, the running one stays:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
  /** The API says what was kept; the problems follow as a list. */
  override answer() {
    return { error: this.code, message: 'configuration not reloaded; the running one stays', problems: this.problems };
  }
}

export interface ReloaderDeps {
  /** The environment the process started with: CONFIG_FILE names the file, variables still override it. */
  env: Record<string, string | undefined>;
  config: Config;
  pipeline: Pick<QueueRegistry, 'setTargets'>;
  /** Absent in a receiver-only process. */
  workers?: RunningWorkers;
  logger: Logger;
}

/**
 * Re-reads the configuration with the same loader and checks as at start (every transform compiles, every postgres
 * target's table is there). Targets take effect at once (the pipeline's target list, which the fan-out reads per
 * event, and the delivery workers); a removed target's queue and dead letters stay in Redis, and deliveries already
 * made for it stay queued. Any other setting that changed is reported as needing a restart and left as it runs.
 */
export function createReloader(deps: ReloaderDeps) {
  let running = deps.config;
  let queue: Promise<unknown> = Promise.resolve();
  const listeners: (() => void)[] = [];

  async function reloadNow(actor: Actor): Promise<ReloadResult> {
    let next: Config;
    try {
      next = loadConfig(deps.env);
      if (next.role !== 'worker') loadEnvironments(next);
      const transforms = await transformProblems(next.targets);
      if (transforms.length) throw new ConfigError(transforms);
      if (deps.workers) {
        const tables = await checkPostgresTables(next.targets);
        if (tables.problems.length) throw new ConfigError(tables.problems);
        for (const warning of tables.warnings) deps.logger.warn('configuration', { warning });
        for (const created of tables.created) deps.logger.info('postgres destination', { created });
      }
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      writeAudit(deps.logger, actor, 'config.reload', { refused: true, problems: err.problems });
      throw new ReloadRefusedError(err.problems);
    }
    const before = new Map(running.targets.map((t) => [t.name, JSON.stringify(t)]));
    const after = new Set(next.targets.map((t) => t.name));
    const result: ReloadResult = {
      added: next.targets.filter((t) => !before.has(t.name)).map((t) => t.name),
      removed: running.targets.filter((t) => !after.has(t.name)).map((t) => t.name),
      changed: next.targets
        .filter((t) => before.has(t.name) && before.get(t.name) !== JSON.stringify(t))
        .map((t) => t.name),
      // Names only: some of these settings are credentials.
      needsRestart: (Object.keys(next) as (keyof Config)[]).filter(
        (k) => k !== 'targets' && JSON.stringify(next[k]) !== JSON.stringify(running[k]),
      ),
    };
    await deps.pipeline.setTargets(next.targets);
    await deps.workers?.applyTargets(next.targets);
    running = { ...running, targets: next.targets };
    for (const listener of listeners) listener();
    writeAudit(deps.logger, actor, 'config.reload', { ...result });
    deps.logger.info('configuration reloaded', { ...result, targets: next.targets.map((t) => t.name) });
    if (result.needsRestart.length)
      deps.logger.warn('configuration changes that need a restart were not applied', { settings: result.needsRestart });
    return result;
  }

  return {
    /** Called after each applied reload (the dashboard shows the new list of queues). */
    onApplied(listener: () => void): void {
      listeners.push(listener);
    },
    /** One reload at a time: a SIGHUP and an API call arriving together are applied in turn. */
    reload(actor: Actor): Promise<ReloadResult> {
      const next = queue.then(() => reloadNow(actor));
      queue = next.catch(() => undefined);
      return next;
    },
  };
}

export type Reloader = ReturnType<typeof createReloader>;
