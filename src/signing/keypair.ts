import { generateKeyPairSync } from 'node:crypto';

export interface TestKeyPair {
  /** PKCS#8 PEM, as the platform's own signer holds it. */
  privateKeyPem: string;
  /** X.509 SubjectPublicKeyInfo, DER in Base64: the form the platform publishes. */
  publicKeyBase64: string;
  publicKeyPem: string;
}

export function generateTestKeyPair(): TestKeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKeyBase64: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}
