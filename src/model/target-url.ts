import { isIPv4 } from 'node:net';

/**
 * Whether a URL's host is this machine: `localhost`, 127.0.0.0/8 or ::1. Plain HTTP to anything else
 * crosses a network where the forwarded payload and its signature can be read or changed.
 */
export function isLoopbackUrl(url: URL): boolean {
  const host = url.hostname.toLowerCase();
  return host === 'localhost' || host === '[::1]' || (isIPv4(host) && host.startsWith('127.'));
}

/** Standard Webhooks' `whsec_` prefix, then the key in Base64. */
export const SECRET_PREFIX = 'whsec_';

/** The key bytes a `whsec_` secret carries (Base64 after the prefix). */
export function secretKeyBytes(secret: string): number {
  return Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64').length;
}
