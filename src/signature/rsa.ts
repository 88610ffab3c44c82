import { verify, type KeyObject } from 'node:crypto';

/**
 * Checks decoded signature bytes against each key in turn (several platform keys can be live during a
 * rotation): at most one RSA verification per configured key.
 */
export function verifyRsaSha256(data: Buffer, signature: Buffer, keys: readonly KeyObject[]): boolean {
  return keys.some((key) => verify('sha256', data, key, signature));
}
