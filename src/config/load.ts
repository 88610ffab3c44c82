import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ENV_SETTINGS, envOverrides } from './env';
import { withTargetEnvironments } from './environments';
import { projectRoot } from './project-root';
import { ConfigError } from './errors';
import { resolveDestinationUrls } from './destination-urls';
import { configSchema, type Config } from './schema';
import { readTransformSources } from './transforms';
import { findUnknownKeys } from './unknown-keys';

export const DEFAULTS_FILE = path.join(projectRoot(), 'config', 'default.yaml');

type Env = Record<string, string | undefined>;
type Path = readonly (string | number)[];

/** Where a setting's value came from: an environment variable, the CONFIG_FILE, or the defaults. */
export type SettingOrigin =
  { kind: 'env'; name: string; path: readonly string[] } | { kind: 'file'; file: string } | { kind: 'default' };

export interface LoadedConfig {
  config: Config;
  /** Valid, but worth saying at start and in `config check`. */
  warnings: string[];
  /** The CONFIG_FILE read, if any. */
  configFile?: string;
  originOf(path: Path): SettingOrigin;
}

function readStructured(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError([`cannot read ${file}: ${(err as Error).message}`]);
  }
  try {
    const parsed: unknown = file.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
    if (parsed === null || parsed === undefined) return {};
    if (typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('top level must be a mapping');
    return parsed as Record<string, unknown>;
  } catch (err) {
    throw new ConfigError([`cannot parse ${file}: ${(err as Error).message}`]);
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function merge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const current = out[k];
    out[k] = isPlainObject(current) && isPlainObject(v) ? merge(current, v) : v;
  }
  return out;
}

function startsWith(whole: Path, prefix: Path): boolean {
  return prefix.length <= whole.length && prefix.every((p, i) => p === whole[i]);
}

function has(value: unknown, key: string | number): value is Record<string | number, unknown> {
  return typeof value === 'object' && value !== null && Object.prototype.hasOwnProperty.call(value, key);
}

/** `targets.0.url`: the file key path, as zod reports it and as the operator wrote it. */
export function keyPath(p: Path): string {
  return p.join('.') || '(root)';
}

/** One problem, naming the setting the way the operator wrote it: the variable, or the key and its file. */
export function describeProblem(p: Path, message: string, origin: SettingOrigin): string {
  // An item of a list variable is named by its position: PLATFORM_SOURCE_CIDRS[1].
  if (origin.kind === 'env')
    return `${origin.name}${p
      .slice(origin.path.length)
      .map((k) => `[${k}]`)
      .join('')}: ${message}`;
  if (origin.kind === 'file') return `${keyPath(p)}: ${message} (in ${origin.file})`;
  return `${keyPath(p)}: ${message}`;
}

/**
 * Reads the configuration once: defaults from config/default.yaml, then `CONFIG_FILE` (YAML or
 * JSON), then environment variables. Throws a ConfigError listing every problem in words, unknown
 * keys included (a mistyped key would otherwise be dropped silently and its default used).
 */
export function loadConfigDetailed(env: Env, defaultsFile = DEFAULTS_FILE): LoadedConfig {
  const defaults = readStructured(defaultsFile);
  const configFile = env.CONFIG_FILE || undefined;
  const fromFile = configFile ? readStructured(configFile) : {};

  const originOf = (p: Path): SettingOrigin => {
    // Later sources win, so look in the order env, file, defaults.
    for (const [name, setting] of Object.entries(ENV_SETTINGS)) {
      if (env[name] !== undefined && env[name] !== '' && startsWith(p, setting.path))
        return { kind: 'env', name, path: setting.path };
    }
    if (configFile && p.length > 0 && has(fromFile, p[0] as string)) return { kind: 'file', file: configFile };
    return { kind: 'default' };
  };

  // A destination's URL may name an environment variable or a file, so that its password is not in the file.
  const unresolved = resolveDestinationUrls(fromFile, env);
  const problems = [
    ...findUnknownKeys(configSchema, defaults).map((u) => ({ ...u, file: defaultsFile })),
    ...(configFile ? findUnknownKeys(configSchema, fromFile).map((u) => ({ ...u, file: configFile })) : []),
  ].map((u) =>
    describeProblem(u.path, `unknown setting${u.suggestion ? `; did you mean ${u.suggestion}?` : ''}`, {
      kind: 'file',
      file: u.file,
    }),
  );
  problems.unshift(
    ...unresolved.map((u) => describeProblem(u.path, u.message, { kind: 'file', file: configFile ?? '' })),
  );

  const raw = merge(merge(defaults, fromFile), envOverrides(env));
  const result = configSchema.safeParse(raw);
  if (!result.success) {
    for (const issue of result.error.issues) {
      if (unresolved.some((u) => keyPath(u.path) === keyPath(issue.path as Path))) continue; // said above
      const message = issue.message.replace(
        /^Invalid input: expected (.+), received undefined$/,
        'missing (expected $1)',
      );
      problems.push(describeProblem(issue.path as Path, message, originOf(issue.path as Path)));
    }
  }
  if (problems.length || !result.success) throw new ConfigError(problems);
  const { config, defaulted } = withTargetEnvironments(result.data);
  const unreadable = readTransformSources(config.targets);
  if (unreadable.length)
    throw new ConfigError(
      unreadable.map((u) =>
        describeProblem(['targets', u.index, 'transform'], u.message, originOf(['targets', u.index, 'transform'])),
      ),
    );
  const warnings = defaulted.length
    ? [
        `targets ${defaulted.join(', ')} name no environments: with several configured they take production events ` +
          `only; say environments: [...] to choose`,
      ]
    : [];
  return { config, warnings, ...(configFile ? { configFile } : {}), originOf };
}

export function loadConfig(env: Env, defaultsFile = DEFAULTS_FILE): Config {
  return loadConfigDetailed(env, defaultsFile).config;
}
