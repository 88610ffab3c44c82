import { createPublicKey, KeyObject, X509Certificate } from 'node:crypto';

export class PublicKeyConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PublicKeyConfigError';
    Object.setPrototypeOf(this, new.target.prototype);
  }
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]+?-----END \1-----/g;

/**
 * Turns configured key text into RSA public keys. One text may hold Base64 DER (X.509
 * SubjectPublicKeyInfo, as the platform publishes it), one or more PEM public keys, or PEM
 * certificates. `source` names the text in error messages (never the key itself).
 */
export function parsePublicKeys(text: string, source: string): KeyObject[] {
  const normalised = text.replace(/\\n/g, '\n').trim();
  if (normalised.includes('-----BEGIN')) {
    const blocks = normalised.match(PEM_BLOCK);
    if (!blocks) throw new PublicKeyConfigError(`${source}: PEM text without a complete BEGIN/END block`);
    return blocks.map((block, i) => parsePem(block, `${source} (PEM block ${i + 1})`));
  }
  return [parseBase64Der(normalised, source)];
}

function parsePem(block: string, source: string): KeyObject {
  if (block.startsWith('-----BEGIN CERTIFICATE-----')) {
    return requireRsa(attempt(() => new X509Certificate(block).publicKey, source, 'certificate'), source);
  }
  if (block.includes('PRIVATE KEY')) {
    throw new PublicKeyConfigError(`${source}: is a private key; configure the platform's public key`);
  }
  return requireRsa(attempt(() => createPublicKey(block), source, 'PEM public key'), source);
}

function parseBase64Der(text: string, source: string): KeyObject {
  const compact = text.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(compact)) {
    throw new PublicKeyConfigError(`${source}: neither PEM nor Base64 (X.509 SubjectPublicKeyInfo DER)`);
  }
  const der = Buffer.from(compact, 'base64');
  return requireRsa(
    attempt(() => createPublicKey({ key: der, format: 'der', type: 'spki' }), source, 'Base64 X.509 public key'),
    source,
  );
}

function attempt(parse: () => KeyObject, source: string, form: string): KeyObject {
  try {
    return parse();
  } catch (err) {
    throw new PublicKeyConfigError(`${source}: not a valid ${form} (${(err as Error).message})`);
  }
}

function requireRsa(key: KeyObject, source: string): KeyObject {
  if (key.asymmetricKeyType !== 'rsa') {
    throw new PublicKeyConfigError(`${source}: is a ${key.asymmetricKeyType ?? 'unknown'} key; SHA256withRSA needs RSA`);
  }
  return key;
}
