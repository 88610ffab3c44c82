import { createHash } from 'node:crypto';
import { decodeSignatureHeader } from './base64';
import { findBodyTimestamp } from './body-timestamp';
import { headerValue, type HeaderBag } from './headers';
import type { SignedRequest, VerifierOptions } from './options';
import { reject, type Rejected, type VerifyResult } from './result';
import { verifyingEnvironment } from './rsa';

export const LEGACY_HEADERS = { signature: 'signature', type: 'type', version: 'version' } as const;

/** Spec 5.2: `merchantId=<id>&timestamp=<body.timestamp>&requestBody=<raw body>`. */
export function legacyStringToSign(merchantId: string, timestamp: number, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`merchantId=${merchantId}&timestamp=${timestamp}&requestBody=`, 'utf8'), body]);
}

/** v1.2 has no nonce: the signature bytes identify the request, whatever their spelling. */
export function legacyReplayKey(signature: Buffer): string {
  return `sig:${createHash('sha256').update(signature).digest('hex')}`;
}

export interface LegacyHeaders {
  scheme: 'legacy';
  signature: Buffer;
  signatureHeaders: Record<string, string>;
}

/**
 * Everything about a v1.2 request that can be judged without its body (its timestamp lives in the
 * body). It runs once per request, before the body is read; `verifyLegacyBody` takes its result, so
 * the precheck's refusals and the verifier's agree.
 */
export function checkLegacyHeaders(headers: HeaderBag, opts: VerifierOptions): LegacyHeaders | Rejected {
  const sign = headerValue(headers, LEGACY_HEADERS.signature);
  const type = headerValue(headers, LEGACY_HEADERS.type);
  const version = headerValue(headers, LEGACY_HEADERS.version);
  if (sign === undefined || sign === '') return reject('missing_signature', 'signature is missing');
  if (sign.length > 500) return reject('malformed_header', 'signature must be at most 500 characters');
  const signature = decodeSignatureHeader(sign);
  if (!signature) return reject('malformed_signature', 'signature is not canonical (URL-encoded) Base64');
  if (type !== 'RSA256')
    return reject(type === undefined ? 'missing_header' : 'malformed_header', 'type must be RSA256');
  if (version !== 'v1.2')
    return reject(version === undefined ? 'missing_header' : 'malformed_header', 'version must be v1.2');
  if (!opts.environments.some((e) => e.merchantId !== undefined))
    return reject('bad_signature', 'legacy scheme needs MERCHANT_ID');
  return { scheme: 'legacy', signature, signatureHeaders: { signature: sign, type, version } };
}

/**
 * The body's part, for headers that passed `checkLegacyHeaders`. The body's timestamp is found by a
 * scan, not a parse, and only that one candidate is verified: the signature covers the body, so a
 * candidate that verifies is the one the platform signed. The receive path confirms it against the
 * parsed body afterwards (`timestampMismatch`).
 */
export function verifyLegacyBody(checked: LegacyHeaders, req: SignedRequest, opts: VerifierOptions): VerifyResult {
  const found = findBodyTimestamp(req.body);
  if (!found.found) return reject('malformed_header', found.problem);
  if (Math.abs(req.nowMs - found.timestamp) > opts.toleranceMs) {
    return reject('timestamp_outside_window', 'body timestamp is outside the allowed window');
  }
  const verifying = verifyingEnvironment(opts.environments, checked.signature, (e) =>
    e.merchantId === undefined ? undefined : legacyStringToSign(e.merchantId, found.timestamp, req.body),
  );
  if (!verifying) return reject('bad_signature', 'signature does not verify');
  const { environment, key } = verifying;
  return {
    ok: true,
    scheme: 'legacy',
    environment: environment.name,
    timestamp: found.timestamp,
    replayKey: legacyReplayKey(checked.signature),
    signatureHeaders: checked.signatureHeaders,
    key,
    signedMerchantId: environment.merchantId,
  };
}

/**
 * After verification, the parsed body must carry the same top-level timestamp the scan found;
 * otherwise the body spells its keys in a way the scan does not read (an escaped or repeated key).
 * Returns the problem, or `undefined` when they agree.
 */
export function legacyTimestampMismatch(json: unknown, verifiedTimestamp: number): string | undefined {
  const parsed = typeof json === 'object' && json !== null ? (json as { timestamp?: unknown }).timestamp : undefined;
  return parsed === verifiedTimestamp
    ? undefined
    : 'timestamp: differs from the timestamp the signature was verified with';
}
