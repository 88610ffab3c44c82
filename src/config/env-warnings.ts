import { ENV_SETTINGS } from './env';
import { nearest } from '../model/nearest';

/** Variables read besides the settings themselves. */
const OTHER_VARIABLES = ['CONFIG_FILE', 'CLI_AUDIT_LOG'];

/**
 * Environment variables that look like a mistyped setting: not a variable the service reads, but
 * the same as one up to case, `_` and `-`, or one edit from it (two for names of 8 letters or
 * more). A typo such as `REDIS_URI` or `log_level` would otherwise leave the default in force
 * without a word. Only near misses are named, because the environment holds much else (`HOME`,
 * `PATH`, an orchestrator's `REDIS_PORT`): a warning, never a refusal.
 */
export function mistypedEnv(env: Record<string, string | undefined>): { variable: string; didYouMean: string }[] {
  const known = [...Object.keys(ENV_SETTINGS), ...OTHER_VARIABLES];
  const knownSet = new Set(known);
  const found: { variable: string; didYouMean: string }[] = [];
  for (const name of Object.keys(env).sort()) {
    if (knownSet.has(name) || env[name] === undefined) continue;
    // Stricter than for file keys: the environment is full of short names (HOME is two letters from HOST).
    const didYouMean = nearest(name, known, name.replace(/[_-]/g, '').length >= 8 ? 2 : 1);
    if (didYouMean) found.push({ variable: name, didYouMean });
  }
  return found;
}

/** The same, in words, as `config check` lists its warnings. */
export function envWarnings(env: Record<string, string | undefined>): string[] {
  return mistypedEnv(env).map(
    ({ variable, didYouMean }) =>
      `environment variable ${variable} is not a setting and is ignored; did you mean ${didYouMean}?`,
  );
}
