import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { generateTestKeyPair } from '../../signing/keypair';

export const KEY_FILES = {
  privateKey: 'platform-private.pem',
  publicKeyBase64: 'platform-public.b64',
  publicKeyPem: 'platform-public.pem',
} as const;

/**
 * Creates a test platform key pair: the private key signs test notifications, the public key configures the receiver.
 */
export function keygen(dir: string, out: (line: string) => void): void {
  mkdirSync(dir, { recursive: true });
  const pair = generateTestKeyPair();
  writeFileSync(path.join(dir, KEY_FILES.privateKey), pair.privateKeyPem, { mode: 0o600 });
  writeFileSync(path.join(dir, KEY_FILES.publicKeyBase64), `${pair.publicKeyBase64}\n`);
  writeFileSync(path.join(dir, KEY_FILES.publicKeyPem), pair.publicKeyPem);
  out(`wrote ${path.join(dir, KEY_FILES.privateKey)} (test signing key: keep it out of production)`);
  out(`wrote ${path.join(dir, KEY_FILES.publicKeyBase64)} and ${KEY_FILES.publicKeyPem}`);
  out(`configure the receiver with: PLATFORM_PUBLIC_KEYS=file:${path.join(dir, KEY_FILES.publicKeyBase64)}`);
}
