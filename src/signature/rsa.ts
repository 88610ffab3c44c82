import { verify, type KeyObject } from 'node:crypto';

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * Decodes a signature header as the spec writes it (URL-encoded Base64) and checks it against each
 * key in turn, so several platform keys can be live during a rotation. Plain Base64 also works:
 * URL-decoding leaves it unchanged.
 */
export function verifyRsaSha256(data: Buffer, signatureHeader: string, keys: readonly KeyObject[]): boolean {
  let base64: string;
  try {
    base64 = decodeURIComponent(signatureHeader);
  } catch {
    return false;
  }
  if (!BASE64.test(base64)) return false;
  const signature = Buffer.from(base64, 'base64');
  return keys.some((key) => verify('sha256', data, key, signature));
}
