import { createHash, timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from '../logging/logger';
import type { FailureWindow } from './auth-failures';

/** `viewer` reads; `operator` also acts (every state-changing request). */
export type AdminRole = 'viewer' | 'operator';

/** A configured principal (`adminPrincipals`): a basic-auth user (`password`) or a bearer token. */
export interface AdminPrincipal {
  name: string;
  role: AdminRole;
  password?: string;
  token?: string;
}

export interface AdminCredentials {
  /** ADMIN_TOKEN: an operator. */
  token?: string;
  /** ADMIN_USER/ADMIN_PASSWORD: an operator. */
  user?: string;
  password?: string;
  principals?: readonly AdminPrincipal[];
}

export interface Authenticated {
  /** `token`, `basic:<user>` or `token:<name>`, as audit lines name it. */
  principal: string;
  role: AdminRole;
}

/** Compares digests, so neither the content nor the length of the secret shows in the timing. */
function same(a: string, b: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(a), digest(b));
}

export function hasCredentials(c: AdminCredentials): boolean {
  return Boolean(c.token || (c.user && c.password) || c.principals?.length);
}

/**
 * The principal a request authenticated as and its role, or undefined. Every configured credential
 * of the scheme is compared (no early return), so the timing does not say which one matched.
 */
export function authenticate(c: AdminCredentials, authorization: string | undefined): Authenticated | undefined {
  // The scheme is case-insensitive (RFC 9110 11.1): `bearer` is as good as `Bearer`.
  const [rawScheme = '', value = ''] = (authorization ?? '').split(' ', 2);
  const scheme = rawScheme.toLowerCase();
  let found: Authenticated | undefined;
  if (scheme === 'bearer') {
    if (c.token && same(value, c.token)) found = { principal: 'token', role: 'operator' };
    for (const p of c.principals ?? []) {
      if (p.token !== undefined && same(value, p.token)) found ??= { principal: `token:${p.name}`, role: p.role };
    }
  }
  if (scheme === 'basic') {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon <= 0) return undefined;
    const [user, password] = [decoded.slice(0, colon), decoded.slice(colon + 1)];
    const users = [
      ...(c.user && c.password ? [{ name: c.user, password: c.password, role: 'operator' as const }] : []),
      ...(c.principals ?? []),
    ];
    for (const p of users) {
      if (p.password !== undefined && same(user, p.name) && same(password, p.password))
        found ??= { principal: `basic:${p.name}`, role: p.role };
    }
  }
  return found;
}

const PRINCIPAL = 'adminPrincipal';
const ROLE = 'adminRole';

/** The principal `requireAdmin` authenticated for this request, for audit lines. */
export function principalOf(req: Request): string {
  const principal: unknown = req.res?.locals[PRINCIPAL];
  return typeof principal === 'string' ? principal : 'unauthenticated';
}

/** The role of the request's principal; `viewer` when it authenticated as none. */
export function roleOf(req: Request): AdminRole {
  return req.res?.locals[ROLE] === 'operator' ? 'operator' : 'viewer';
}

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Refuses every state-changing request of a `viewer` with 403 `read_only_principal`, before any route
 * sees it: a viewer reads the console, the API, the dashboard and the metrics, and changes nothing.
 */
export function operatorsOnlyWrites(logger: Logger) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (SAFE.has(req.method) || roleOf(req) === 'operator') return next();
    logger.warn('admin change refused: read-only principal', {
      principal: principalOf(req),
      from: req.socket.remoteAddress,
      method: req.method,
      path: req.originalUrl.split('?', 1)[0],
    });
    res
      .status(403)
      .json({ error: 'read_only_principal', message: `${principalOf(req)} is a viewer: changes need an operator` });
  };
}

/** The scheme a request tried, from a fixed set: the header's text is the caller's, never logged as is. */
function schemeOf(authorization: string | undefined): string {
  const scheme = (authorization ?? '').split(' ', 1)[0]!.toLowerCase();
  return scheme === 'bearer' || scheme === 'basic' ? scheme : 'other';
}

/**
 * Bearer token (`ADMIN_TOKEN`, or a configured principal's) for tools, or basic auth (`ADMIN_USER`/
 * `ADMIN_PASSWORD`, or a configured principal's) for a browser.
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
      return void res.status(429).json({
        error: 'too_many_failures',
        message: 'too many failed admin logins from this address; try again later',
      });
    }
    const authorization = req.headers.authorization;
    const who = authenticate(c, authorization);
    if (who) {
      res.locals[PRINCIPAL] = who.principal;
      res.locals[ROLE] = who.role;
      return next();
    }
    if (authorization !== undefined) {
      const blocked = failures.record(from);
      logger.warn('admin authentication failed', {
        from,
        scheme: schemeOf(authorization),
        method: req.method,
        path: req.originalUrl.split('?', 1)[0],
      });
      if (blocked) logger.warn('admin logins from this address refused for a while: too many failures', { from });
    }
    if (c.user || c.principals?.some((p) => p.password !== undefined))
      res.setHeader('WWW-Authenticate', 'Basic realm="webhook-receiver admin", charset="UTF-8"');
    res.status(401).json({ error: 'unauthorized', message: 'admin credentials required (Bearer token or basic auth)' });
  };
}
