import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { envOverrides } from './env';
import { projectRoot } from './project-root';
import { ConfigError } from './errors';
import { configSchema, type Config } from './schema';

export const DEFAULTS_FILE = path.join(projectRoot(), 'config', 'default.yaml');

type Env = Record<string, string | undefined>;

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

/**
 * Reads the configuration once: defaults from config/default.yaml, then `CONFIG_FILE` (YAML or
 * JSON), then environment variables. Throws a ConfigError listing every problem in words.
 */
export function loadConfig(env: Env, defaultsFile = DEFAULTS_FILE): Config {
  let raw = readStructured(defaultsFile);
  if (env.CONFIG_FILE) raw = merge(raw, readStructured(env.CONFIG_FILE));
  raw = merge(raw, envOverrides(env));
  const result = configSchema.safeParse(raw);
  if (!result.success) {
    throw new ConfigError(result.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`));
  }
  return result.data;
}
