import { headerValue } from './headers';
import type { SignedRequest, VerifierOptions } from './options';
import { reject, type VerifyResult } from './result';
import { verifyRsaSha256 } from './rsa';

export const SIGN_ALG = 'SHA256_WITH_RSA';
/** Milliseconds need 13 digits; the spec's String[1,11] bound cannot hold one, so we allow 1 to 13. */
const TIMESTAMP = /^\d{1,13}$/;
const LF = Buffer.from('\n');

/**
 * Spec 5.1: five lines, each ended by LF. Line 5 is the body as sent plus one LF, which also covers
 * the rules for an empty body and for a body that itself ends with LF.
 */
export function currentStringToSign(method: string, target: string, timestamp: string, nonce: string, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${method}\n${target}\n${timestamp}\n${nonce}\n`, 'utf8'), body, LF]);
}

export function verifyCurrent(req: SignedRequest, opts: VerifierOptions): VerifyResult {
  const name = (suffix: string) => `${opts.headerPrefix}-${suffix}`;
  const timestamp = headerValue(req.headers, name('timestamp'));
  const nonce = headerValue(req.headers, name('nonce'));
  const sign = headerValue(req.headers, name('sign'));
  const appId = headerValue(req.headers, name('appid'));
  const signAlg = headerValue(req.headers, name('sign-alg'));

  if (timestamp === undefined) return reject('missing_header', `${name('timestamp')} is missing`);
  if (!TIMESTAMP.test(timestamp)) return reject('malformed_header', `${name('timestamp')} must be 1 to 13 digits (milliseconds)`);
  if (nonce === undefined) return reject('missing_header', `${name('nonce')} is missing`);
  if (nonce.length < 10 || nonce.length > 100) return reject('malformed_header', `${name('nonce')} must be 10 to 100 characters`);
  if (sign === undefined || sign === '') return reject('missing_signature', `${name('sign')} is missing`);
  if (sign.length > 500) return reject('malformed_header', `${name('sign')} must be at most 500 characters`);
  if (signAlg !== undefined && signAlg !== SIGN_ALG) return reject('malformed_header', `${name('sign-alg')} must be ${SIGN_ALG}`);
  if (appId !== undefined) {
    if (appId.length < 1 || appId.length > 64) return reject('malformed_header', `${name('appid')} must be 1 to 64 characters`);
    if (opts.appId !== undefined && appId !== opts.appId) return reject('malformed_header', `${name('appid')} is not the platform's`);
  }

  const timestampMs = Number(timestamp);
  if (Math.abs(req.nowMs - timestampMs) > opts.toleranceMs) {
    return reject('timestamp_outside_window', `${name('timestamp')} is outside the allowed window`);
  }

  const data = currentStringToSign(req.method, req.target, timestamp, nonce, req.body);
  if (!verifyRsaSha256(data, sign, opts.keys)) return reject('bad_signature', 'signature does not verify');

  const signatureHeaders: Record<string, string> = {
    [name('timestamp')]: timestamp,
    [name('nonce')]: nonce,
    [name('sign')]: sign,
  };
  if (appId !== undefined) signatureHeaders[name('appid')] = appId;
  if (signAlg !== undefined) signatureHeaders[name('sign-alg')] = signAlg;
  return { ok: true, scheme: 'current', timestamp: timestampMs, replayKey: nonce, signatureHeaders };
}
