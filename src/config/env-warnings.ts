import { ENV_SETTINGS } from './env';
import { editDistance } from './nearest';

/** Variables read besides the settings themselves. */
const OTHER_VARIABLES = ['CONFIG_FILE'];

const fold = (name: string) => name.toLowerCase().replace(/[_-]/g, '');

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
    const folded = fold(name);
    const limit = folded.length >= 8 ? 2 : 1;
    let best: { name: string; distance: number } | undefined;
    for (const candidate of known) {
      const distance = editDistance(folded, fold(candidate));
      if (distance <= limit && (!best || distance < best.distance)) best = { name: candidate, distance };
    }
    if (best) found.push({ variable: name, didYouMean: best.name });
  }
  return found;
}

/** The same, in words, as `config check` lists its warnings. */
export function envWarnings(env: Record<string, string | undefined>): string[] {
  return mistypedEnv(env).map(({ variable, didYouMean }) => `environment variable ${variable} is not a setting and is ignored; did you mean ${didYouMean}?`);
}
