import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const LIFETIME_MS = 12 * 3_600_000;

/**
 * Signed CSRF tokens for the console's forms: `<issued at, base36>.<HMAC-SHA256 of the principal and
 * the time>` under a key made when the process starts. A token works for the principal it was made
 * for, for 12 hours, in this process only (a restart asks the operator to reload the page). With the
 * Origin check in front, a page on another site can neither send the form nor read a token to send.
 */
export function createCsrf(key: Buffer = randomBytes(32), now: () => number = Date.now) {
  const sign = (principal: string, issued: string) =>
    createHmac('sha256', key).update(`${principal}\n${issued}`).digest('base64url');
  return {
    issue(principal: string): string {
      const issued = now().toString(36);
      return `${issued}.${sign(principal, issued)}`;
    },
    /** Whether the token was made for this principal by this process, less than 12 hours ago. */
    check(principal: string, token: unknown): boolean {
      if (typeof token !== 'string') return false;
      const [issued = '', mac = ''] = token.split('.', 2);
      const at = parseInt(issued, 36);
      if (!Number.isFinite(at) || now() - at > LIFETIME_MS || at > now() + 60_000) return false;
      const expected = Buffer.from(sign(principal, issued));
      const given = Buffer.from(mac);
      return given.length === expected.length && timingSafeEqual(given, expected);
    },
  };
}

export type Csrf = ReturnType<typeof createCsrf>;
