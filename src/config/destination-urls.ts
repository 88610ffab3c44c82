import { readFileSync } from 'node:fs';

type Env = Record<string, string | undefined>;
type Path = (string | number)[];

/** The keys of a destination that hold its URLs, each of which may be given by reference. */
const URL_KEYS = ['url', 'servers'] as const;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * One URL as written: the URL itself, `{ env: NAME }` (the variable's value) or `file:<path>` (the
 * file's text, trimmed; relative to the working directory). Answers the URL, or the problem in words.
 */
function resolveUrl(value: unknown, env: Env): { url: unknown } | { problem: string } {
  if (isPlainObject(value)) {
    const keys = Object.keys(value);
    const name = value.env;
    if (keys.length !== 1 || typeof name !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      return { problem: 'a URL reference is { env: NAME } (an environment variable), or write file:<path> or the URL' };
    const url = env[name];
    return url ? { url } : { problem: `environment variable ${name} is not set (or empty)` };
  }
  if (typeof value !== 'string' || !value.startsWith('file:')) return { url: value };
  const file = value.slice('file:'.length);
  try {
    const url = readFileSync(file, 'utf8').trim();
    return url ? { url } : { problem: `file ${file} is empty` };
  } catch (err) {
    return { problem: `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}` };
  }
}

/**
 * Replaces each target's destination URL reference (`url`, or each of NATS's `servers`) by the URL it
 * names, in place, before the configuration is checked; answers the references that name nothing.
 */
export function resolveDestinationUrls(file: Record<string, unknown>, env: Env): { path: Path; message: string }[] {
  const problems: { path: Path; message: string }[] = [];
  const targets = Array.isArray(file.targets) ? (file.targets as unknown[]) : [];
  targets.forEach((target, i) => {
    const d = isPlainObject(target) ? target.destination : undefined;
    if (!isPlainObject(d)) return;
    for (const key of URL_KEYS) {
      const value = d[key];
      const items = Array.isArray(value) ? value : value === undefined ? [] : [value];
      const resolved = items.map((item, j) => {
        const r = resolveUrl(item, env);
        if ('problem' in r)
          problems.push({
            path: ['targets', i, 'destination', key, ...(Array.isArray(value) ? [j] : [])],
            message: r.problem,
          });
        return 'url' in r ? r.url : item;
      });
      if (items.length) d[key] = Array.isArray(value) ? resolved : resolved[0];
    }
  });
  return problems;
}
