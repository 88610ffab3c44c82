import { createHash } from 'node:crypto';
import { headerValue } from './headers';
import type { SignedRequest, VerifierOptions } from './options';
import { reject, type VerifyResult } from './result';
import { verifyRsaSha256 } from './rsa';

export const LEGACY_HEADERS = { signature: 'signature', type: 'type', version: 'version' } as const;

/** Spec 5.2: `merchantId=<id>&timestamp=<body.timestamp>&requestBody=<raw body>`. */
export function legacyStringToSign(merchantId: string, timestamp: number, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`merchantId=${merchantId}&timestamp=${timestamp}&requestBody=`, 'utf8'), body]);
}

/**
 * The v1.2 timestamp lives in the body, so this is the one place that reads the body before the
 * signature is checked; only the `timestamp` field is taken, and nothing else is trusted yet.
 */
function bodyTimestamp(body: Buffer): number | undefined {
  try {
    const parsed: unknown = JSON.parse(body.toString('utf8'));
    if (typeof parsed !== 'object' || parsed === null) return undefined;
    const ts = (parsed as { timestamp?: unknown }).timestamp;
    return typeof ts === 'number' && Number.isSafeInteger(ts) && ts >= 0 ? ts : undefined;
  } catch {
    return undefined;
  }
}

export function verifyLegacy(req: SignedRequest, opts: VerifierOptions): VerifyResult {
  const signature = headerValue(req.headers, LEGACY_HEADERS.signature);
  const type = headerValue(req.headers, LEGACY_HEADERS.type);
  const version = headerValue(req.headers, LEGACY_HEADERS.version);
  if (signature === undefined || signature === '') return reject('missing_signature', 'signature is missing');
  if (signature.length > 500) return reject('malformed_header', 'signature must be at most 500 characters');
  if (type !== 'RSA256') return reject(type === undefined ? 'missing_header' : 'malformed_header', 'type must be RSA256');
  if (version !== 'v1.2') return reject(version === undefined ? 'missing_header' : 'malformed_header', 'version must be v1.2');
  if (opts.merchantId === undefined) return reject('bad_signature', 'legacy scheme needs MERCHANT_ID');

  const timestamp = bodyTimestamp(req.body);
  if (timestamp === undefined) return reject('malformed_header', 'body timestamp (integer milliseconds) is missing');
  if (Math.abs(req.nowMs - timestamp) > opts.toleranceMs) {
    return reject('timestamp_outside_window', 'body timestamp is outside the allowed window');
  }

  if (!verifyRsaSha256(legacyStringToSign(opts.merchantId, timestamp, req.body), signature, opts.keys)) {
    return reject('bad_signature', 'signature does not verify');
  }
  // v1.2 has no nonce: the signature itself identifies the request for replay detection.
  const replayKey = `sig:${createHash('sha256').update(signature).digest('hex')}`;
  return {
    ok: true,
    scheme: 'legacy',
    timestamp,
    replayKey,
    signatureHeaders: { signature, type, version },
  };
}
