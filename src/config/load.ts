import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ENV_SETTINGS, envOverrides } from './env';
import { withTargetEnvironments } from './environments';
import { projectRoot } from './project-root';
import { ConfigError } from './errors';
import { resolveDestinationUrls } from './destination-urls';
import { configSchema, type Config } from './schema';
import { readTransformSources } from './transforms';
import { nearest } from '../model/nearest';

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

/** Whether `value` holds a key at `p` (`['targets', 0, 'url']`). */
function holds(value: unknown, p: Path): boolean {
  let v = value;
  for (const key of p) {
    if (!has(v, key)) return false;
    v = v[key];
  }
  return true;
}

/**
 * zod's `unrecognized_keys` (every config object is strict) in words: each key the object does not
 * name, with the nearest one it does. A mistyped key would otherwise be dropped and its default used.
 */
function unknownSettings(issue: z.core.$ZodRawIssue): string | undefined {
  if (issue.code !== 'unrecognized_keys') return undefined;
  const known = issue.inst instanceof z.ZodObject ? Object.keys(issue.inst.shape) : [];
  const named = issue.keys.map((key) => {
    const suggestion = nearest(key, known);
    return suggestion ? `${key} (did you mean ${suggestion}?)` : key;
  });
  return `unknown setting${named.length > 1 ? 's' : ''} ${named.join(', ')}`;
}

/** `targets.0.url`: the file key path, as zod reports it and as the operator wrote it. */
function keyPath(p: Path): string {
  return p.join('.');
}

/** One problem, naming the setting the way the operator wrote it: the variable, or the key and its file. */
function describeProblem(p: Path, message: string, origin: SettingOrigin): string {
  // An item of a list variable is named by its position: PLATFORM_SOURCE_CIDRS[1].
  if (origin.kind === 'env')
    return `${origin.name}${p
      .slice(origin.path.length)
      .map((k) => `[${k}]`)
      .join('')}: ${message}`;
  const where = p.length ? `${keyPath(p)}: ` : '';
  return origin.kind === 'file' ? `${where}${message} (in ${origin.file})` : `${where}${message}`;
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
  const problems = unresolved.map((u) => describeProblem(u.path, u.message, { kind: 'file', file: configFile ?? '' }));

  const raw = merge(merge(defaults, fromFile), envOverrides(env));
  const result = configSchema.safeParse(raw, { error: unknownSettings });
  if (!result.success) {
    for (const issue of result.error.issues) {
      const where = issue.path as Path;
      if (unresolved.some((u) => keyPath(u.path) === keyPath(where))) continue; // said above
      // An unknown key can only be written in a file (each variable names a known setting).
      const origin: SettingOrigin =
        issue.code === 'unrecognized_keys'
          ? {
              kind: 'file',
              file: configFile && issue.keys.some((k) => holds(fromFile, [...where, k])) ? configFile : defaultsFile,
            }
          : originOf(where);
      const message = issue.message.replace(
        /^Invalid input: expected (.+), received undefined$/,
        'missing (expected $1)',
      );
      problems.push(describeProblem(where, message, origin));
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
