import { verify, type KeyObject } from 'node:crypto';
import type { VerifierEnvironment } from './options';

/**
 * Checks decoded signature bytes against each key in turn (several platform keys can be live during a
 * rotation): at most one RSA verification per configured key.
 */
export function verifyRsaSha256(data: Buffer, signature: Buffer, keys: readonly KeyObject[]): boolean {
  return keys.some((key) => verify('sha256', data, key, signature));
}

/**
 * The environment whose key verifies the signature over the string `signed` builds for it (the
 * legacy string differs by environment: it holds the merchant id), and that key; undefined when none
 * does. At most one RSA verification per configured key (several are live during a rotation).
 */
export function verifyingEnvironment<E extends VerifierEnvironment>(
  environments: readonly E[],
  signature: Buffer,
  signed: (environment: E) => Buffer | undefined,
): { environment: E; key: KeyObject } | undefined {
  for (const environment of environments) {
    const data = signed(environment);
    if (data === undefined) continue;
    const key = environment.keys.find((k) => verify('sha256', data, k, signature));
    if (key) return { environment, key };
  }
  return undefined;
}
