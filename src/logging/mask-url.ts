const MASK = '***';
/** Query parameters whose values are secrets (`?password=`, which ioredis accepts, `access_token`, `api_key`, …). */
const SECRET_PARAM = /pass|pwd|token|secret|key|auth/i;
const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;

/**
 * A URL fit to show (logs, `config check`, the console, the admin API, metrics, traces): its password,
 * or a user name standing alone (a token: `nats://TOKEN@host`), and the values of query parameters
 * named like secrets, replaced. A URL that does not parse has its whole authority replaced (it may hold
 * a password with `/` or `#`, which no parser splits as the writer meant); a password holding `@` is
 * masked whole (the last `@` ends it, as for WHATWG's parser and the clients we use).
 */
export function maskUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return maskUnparsed(url);
  }
  const secrets = [...u.searchParams.keys()].filter((name) => SECRET_PARAM.test(name));
  // Nothing to mask: shown exactly as written (the parser would add a slash, re-encode, …).
  if (!u.password && !u.username && secrets.length === 0) return url;
  if (u.password) u.password = MASK;
  else if (u.username) u.username = MASK;
  for (const name of secrets) u.searchParams.set(name, MASK);
  // searchParams.set encodes the mask; shown as written.
  return u.toString().replace(/=%2A%2A%2A/g, `=${MASK}`);
}

function maskUnparsed(text: string): string {
  const scheme = SCHEME.exec(text)?.[0];
  if (scheme === undefined) return text.includes('@') ? `${MASK}@${text.slice(text.lastIndexOf('@') + 1)}` : text;
  const rest = text.slice(scheme.length);
  const at = rest.lastIndexOf('@');
  const end = at >= 0 ? at + 1 + authorityEnd(rest.slice(at + 1)) : authorityEnd(rest);
  return `${scheme}${MASK}${maskQuery(rest.slice(end))}`;
}

function authorityEnd(text: string): number {
  const end = text.search(/[/?#]/);
  return end < 0 ? text.length : end;
}

function maskQuery(pathAndQuery: string): string {
  return pathAndQuery.replace(/([?&;])([^=&#;]*)=([^&#;]*)/g, (whole, sep: string, name: string) =>
    SECRET_PARAM.test(name) ? `${sep}${name}=${MASK}` : whole,
  );
}
