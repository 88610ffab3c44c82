import { createPublicKey, type KeyObject, X509Certificate } from 'node:crypto';
import { ServiceError } from '../model/errors';

export class PublicKeyConfigError extends ServiceError {
  readonly code = 'invalid_public_key';
  readonly status = 400;
  constructor(message: string) {
    super(message);
  }
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]+?-----END \1-----/g;
/** NIST SP 800-131A: RSA below 2048 bits is disallowed for signatures; a platform key this short is a mistake. */
export const MIN_RSA_BITS = 2048;

/** A platform key and, when it came in a certificate, the certificate's validity period. */
export interface PlatformKey {
  key: KeyObject;
  /** Names the configured entry (and PEM block), never the key itself. */
  source: string;
  validity?: { notBefore: Date; notAfter: Date };
}

/**
 * Turns configured key text into RSA public keys. One text may hold Base64 DER (X.509
 * SubjectPublicKeyInfo, as the platform publishes it), one or more PEM public keys, or PEM
 * certificates. `source` names the text in error messages (never the key itself).
 */
export function parsePublicKeys(text: string, source: string): PlatformKey[] {
  const normalised = text.replace(/\\n/g, '\n').trim();
  if (normalised.includes('-----BEGIN')) {
    const blocks = normalised.match(PEM_BLOCK);
    if (!blocks) throw new PublicKeyConfigError(`${source}: PEM text without a complete BEGIN/END block`);
    return blocks.map((block, i) => parsePem(block, `${source} (PEM block ${i + 1})`));
  }
  return [{ key: parseBase64Der(normalised, source), source }];
}

function parsePem(block: string, source: string): PlatformKey {
  if (block.startsWith('-----BEGIN CERTIFICATE-----')) {
    const certificate = attemptCertificate(block, source);
    const key = requireRsa(certificate.publicKey, source);
    return {
      key,
      source,
      validity: { notBefore: new Date(certificate.validFrom), notAfter: new Date(certificate.validTo) },
    };
  }
  if (block.includes('PRIVATE KEY')) {
    throw new PublicKeyConfigError(`${source}: is a private key; configure the platform's public key`);
  }
  return {
    key: requireRsa(
      attempt(() => createPublicKey(block), source, 'PEM public key'),
      source,
    ),
    source,
  };
}

function attemptCertificate(block: string, source: string): X509Certificate {
  try {
    return new X509Certificate(block);
  } catch (err) {
    throw new PublicKeyConfigError(`${source}: not a valid certificate (${(err as Error).message})`);
  }
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
    throw new PublicKeyConfigError(
      `${source}: is a ${key.asymmetricKeyType ?? 'unknown'} key; SHA256withRSA needs RSA`,
    );
  }
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (bits < MIN_RSA_BITS) {
    throw new PublicKeyConfigError(`${source}: is a ${bits}-bit RSA key; at least ${MIN_RSA_BITS} bits are required`);
  }
  return key;
}
