import { DEFAULT_ENVIRONMENT, environmentNames } from '../model/environments';
import { compileFilter } from '../model/filter';
import { filterDocument } from '../routing/routing';
import type { Config } from './schema';

/** One platform environment's settings, the flat shorthand resolved. */
export interface EnvironmentSettings {
  name: string;
  publicKeys: readonly string[];
  appId?: string;
  merchantId?: string;
  sourceCidrs?: readonly string[];
  accept?: Record<string, unknown>;
}

type EnvironmentConfig = Pick<Config, 'environments' | 'platformPublicKeys' | 'platformAppId' | 'merchantId'>;

/**
 * The environments as the receiver uses them: `environments` as configured, each falling back to
 * the flat `platformAppId` and `merchantId`; without it, one `production` made of the flat settings.
 */
export function environmentsOf(c: EnvironmentConfig): EnvironmentSettings[] {
  if (!c.environments) {
    return [
      {
        name: DEFAULT_ENVIRONMENT,
        publicKeys: c.platformPublicKeys,
        ...defined({ appId: c.platformAppId, merchantId: c.merchantId }),
      },
    ];
  }
  return Object.entries(c.environments).map(([name, e]) => ({
    name,
    publicKeys: e.publicKeys,
    ...defined({
      appId: e.appId ?? c.platformAppId,
      merchantId: e.merchantId ?? c.merchantId,
      sourceCidrs: e.sourceCidrs,
      accept: e.accept,
    }),
  }));
}

/**
 * Gives every target the environments it takes: those it names; otherwise the only environment, or,
 * with several, `production` alone. Returns the names of the targets that took `production` that way,
 * so start-up can say so (a sandbox event they would once have received no longer reaches them).
 */
export function withTargetEnvironments(config: Config): { config: Config; defaulted: string[] } {
  const names = environmentNames(config);
  const fallback = names.length === 1 ? names : [DEFAULT_ENVIRONMENT];
  const defaulted =
    names.length > 1 ? config.targets.filter((t) => t.environments === undefined).map((t) => t.name) : [];
  const targets = config.targets.map((t) => (t.environments === undefined ? { ...t, environments: [...fallback] } : t));
  return { config: { ...config, targets }, defaulted };
}

/**
 * An environment's acceptance rule as the receiver applies it: the rule, in the target-filter syntax,
 * over the body with `merchantId` from the `X-Merch-Id` header. The receiver and `config check` both
 * judge with this one function.
 */
export function acceptTest(
  accept: Record<string, unknown>,
): (payload: unknown, merchantId: string | undefined) => boolean {
  const test = compileFilter(accept);
  return (payload, merchantId) => test(filterDocument(payload, merchantId));
}

function defined<T extends Record<string, unknown>>(fields: T): Partial<T> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * The addresses the public port lets reach verification: `platformSourceCidrs` when set; otherwise,
 * when every environment names its own `sourceCidrs`, all of them (each environment then checks its
 * own once the signature says which it is); otherwise none (any address).
 */
export function sourceCidrsOf(c: Pick<Config, 'environments' | 'platformSourceCidrs'>): string[] {
  if (c.platformSourceCidrs.length > 0) return c.platformSourceCidrs;
  const environments = Object.values(c.environments ?? {});
  if (environments.length === 0 || environments.some((e) => !e.sourceCidrs)) return [];
  return [...new Set(environments.flatMap((e) => e.sourceCidrs ?? []))];
}
