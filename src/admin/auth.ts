import { createHash, timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';

export interface AdminCredentials {
  token?: string;
  user?: string;
  password?: string;
}

/** Compares digests, so neither the content nor the length of the secret shows in the timing. */
function same(a: string, b: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(a), digest(b));
}

export function hasCredentials(c: AdminCredentials): boolean {
  return Boolean(c.token || (c.user && c.password));
}

/** `token` or `basic:<user>`: the principal a request authenticated as, or undefined. */
export function authenticate(c: AdminCredentials, authorization: string | undefined): string | undefined {
  const [scheme, value = ''] = (authorization ?? '').split(' ', 2);
  if (scheme === 'Bearer' && c.token && same(value, c.token)) return 'token';
  if (scheme === 'Basic' && c.user && c.password) {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon > 0 && same(decoded.slice(0, colon), c.user) && same(decoded.slice(colon + 1), c.password)) return `basic:${c.user}`;
  }
  return undefined;
}

const PRINCIPAL = 'adminPrincipal';

/** The principal `requireAdmin` authenticated for this request, for audit lines. */
export function principalOf(req: Request): string {
  const principal: unknown = req.res?.locals[PRINCIPAL];
  return typeof principal === 'string' ? principal : 'unauthenticated';
}

/** Bearer token (`ADMIN_TOKEN`) for tools, or basic auth (`ADMIN_USER`/`ADMIN_PASSWORD`) for a browser. */
export function requireAdmin(c: AdminCredentials) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const principal = authenticate(c, req.headers.authorization);
    if (principal) {
      res.locals[PRINCIPAL] = principal;
      return next();
    }
    if (c.user) res.setHeader('WWW-Authenticate', 'Basic realm="webhook-receiver admin", charset="UTF-8"');
    res.status(401).json({ error: 'unauthorized', message: 'admin credentials required (Bearer token or basic auth)' });
  };
}
