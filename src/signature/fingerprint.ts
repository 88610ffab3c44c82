import { createHash, type KeyObject } from 'node:crypto';

/** A public key as the archive names and keeps it. */
export interface KeyIdentity {
  /** SHA-256 (hex) of the key's DER (SPKI) encoding: what `openssl pkey -pubin -outform DER | sha256sum` prints. */
  fingerprint: string;
  pem: string;
}

const identities = new WeakMap<KeyObject, KeyIdentity>();

/** The key's fingerprint and PEM, computed once per key object (the configured keys live as long as the process). */
export function keyIdentity(key: KeyObject): KeyIdentity {
  let identity = identities.get(key);
  if (!identity) {
    const der = key.export({ type: 'spki', format: 'der' });
    identity = {
      fingerprint: createHash('sha256').update(der).digest('hex'),
      pem: key.export({ type: 'spki', format: 'pem' }).toString(),
    };
    identities.set(key, identity);
  }
  return identity;
}
