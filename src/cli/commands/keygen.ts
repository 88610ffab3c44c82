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
  const publicKey = `file:${path.join(dir, KEY_FILES.publicKeyBase64)}`;
  // A sandbox key never goes in PLATFORM_PUBLIC_KEYS (production's environment): it gets its own.
  const environment = /sandbox|test|staging/i.exec(path.basename(path.resolve(dir)))?.[0].toLowerCase();
  if (environment)
    out(
      `configure the receiver with its own environment in the config file (never in PLATFORM_PUBLIC_KEYS beside ` +
        `production's keys): environments: { ${environment}: { publicKeys: [${publicKey}] } }, and name ` +
        `${environment} in the environments of the targets that take it`,
    );
  else out(`configure the receiver with: PLATFORM_PUBLIC_KEYS=${publicKey}`);
}
