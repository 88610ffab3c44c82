import { createHash, timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from '../logging/logger';
import type { FailureWindow } from './auth-failures';

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
  // The scheme is case-insensitive (RFC 9110 11.1): `bearer` is as good as `Bearer`.
  const [rawScheme = '', value = ''] = (authorization ?? '').split(' ', 2);
  const scheme = rawScheme.toLowerCase();
  if (scheme === 'bearer' && c.token && same(value, c.token)) return 'token';
  if (scheme === 'basic' && c.user && c.password) {
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

/** The scheme a request tried, from a fixed set: the header's text is the caller's, never logged as is. */
function schemeOf(authorization: string | undefined): string {
  const scheme = (authorization ?? '').split(' ', 1)[0]!.toLowerCase();
  return scheme === 'bearer' || scheme === 'basic' ? scheme : 'other';
}

/**
 * Bearer token (`ADMIN_TOKEN`) for tools, or basic auth (`ADMIN_USER`/`ADMIN_PASSWORD`) for a browser.
 * A request that presents a wrong credential is logged (address and scheme, never the credential)
 * and counted; an address with too many recent failures gets 429 until its window clears. A request
 * without any credential is a browser's first visit (it answers the 401 challenge), not a failure.
 */
export function requireAdmin(c: AdminCredentials, failures: FailureWindow, logger: Logger) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const from = req.socket.remoteAddress ?? 'unknown';
    const waitMs = failures.blockedFor(from);
    if (waitMs > 0) {
      res.setHeader('Retry-After', String(Math.ceil(waitMs / 1000)));
      return void res.status(429).json({ error: 'too_many_failures', message: 'too many failed admin logins from this address; try again later' });
    }
    const authorization = req.headers.authorization;
    const principal = authenticate(c, authorization);
    if (principal) {
      res.locals[PRINCIPAL] = principal;
      return next();
    }
    if (authorization !== undefined) {
      const blocked = failures.record(from);
      logger.warn('admin authentication failed', { from, scheme: schemeOf(authorization), method: req.method, path: req.originalUrl.split('?', 1)[0] });
      if (blocked) logger.warn('admin logins from this address refused for a while: too many failures', { from });
    }
    if (c.user) res.setHeader('WWW-Authenticate', 'Basic realm="webhook-receiver admin", charset="UTF-8"');
    res.status(401).json({ error: 'unauthorized', message: 'admin credentials required (Bearer token or basic auth)' });
  };
}
