import { decodeSignatureHeader } from './base64';
import { headerValue, type HeaderBag } from './headers';
import type { SignedRequest, VerifierOptions } from './options';
import { reject, type Rejected, type VerifyResult } from './result';
import { verifyingEnvironment } from './rsa';

export const SIGN_ALG = 'SHA256_WITH_RSA';
/** Milliseconds need 13 digits; the spec's String[1,11] bound cannot hold one, so we allow 1 to 13. */
const TIMESTAMP = /^\d{1,13}$/;
const LF = Buffer.from('\n');

/**
 * Spec 5.1: five lines, each ended by LF. Line 5 is the body as sent plus one LF, which also covers
 * the rules for an empty body and for a body that itself ends with LF.
 */
export function currentStringToSign(
  method: string,
  target: string,
  timestamp: string,
  nonce: string,
  body: Buffer,
): Buffer {
  return Buffer.concat([Buffer.from(`${method}\n${target}\n${timestamp}\n${nonce}\n`, 'utf8'), body, LF]);
}

/** The current scheme's headers once they passed every check that needs no body. */
export interface CurrentHeaders {
  scheme: 'current';
  timestamp: string;
  timestampMs: number;
  nonce: string;
  signature: Buffer;
  signatureHeaders: Record<string, string>;
}

/** The header names of one prefix, spelled out once instead of per request. */
interface CurrentNames {
  timestamp: string;
  nonce: string;
  sign: string;
  appId: string;
  signAlg: string;
}

const namesByPrefix = new Map<string, CurrentNames>();

function namesOf(prefix: string): CurrentNames {
  let names = namesByPrefix.get(prefix);
  if (names === undefined) {
    names = {
      timestamp: `${prefix}-timestamp`,
      nonce: `${prefix}-nonce`,
      sign: `${prefix}-sign`,
      appId: `${prefix}-appid`,
      signAlg: `${prefix}-sign-alg`,
    };
    namesByPrefix.set(prefix, names);
  }
  return names;
}

/**
 * Everything about a current-scheme request that can be judged without its body: presence, format,
 * the canonical signature encoding and the timestamp window. It runs once per request, before the
 * body is read; the body check (`verifyCurrentBody`) takes its result, so the precheck and the
 * verifier refuse the same headers with the same reason and detail.
 */
export function checkCurrentHeaders(
  headers: HeaderBag,
  nowMs: number,
  opts: VerifierOptions,
): CurrentHeaders | Rejected {
  const name = namesOf(opts.headerPrefix);
  const timestamp = headerValue(headers, name.timestamp);
  const nonce = headerValue(headers, name.nonce);
  const sign = headerValue(headers, name.sign);
  const appId = headerValue(headers, name.appId);
  const signAlg = headerValue(headers, name.signAlg);

  if (timestamp === undefined) return reject('missing_header', `${name.timestamp} is missing`);
  if (!TIMESTAMP.test(timestamp))
    return reject('malformed_header', `${name.timestamp} must be 1 to 13 digits (milliseconds)`);
  if (nonce === undefined) return reject('missing_header', `${name.nonce} is missing`);
  if (nonce.length < 10 || nonce.length > 100)
    return reject('malformed_header', `${name.nonce} must be 10 to 100 characters`);
  if (sign === undefined || sign === '') return reject('missing_signature', `${name.sign} is missing`);
  if (sign.length > 500) return reject('malformed_header', `${name.sign} must be at most 500 characters`);
  const signature = decodeSignatureHeader(sign);
  if (!signature) return reject('malformed_signature', `${name.sign} is not canonical (URL-encoded) Base64`);
  if (signAlg !== undefined && signAlg !== SIGN_ALG)
    return reject('malformed_header', `${name.signAlg} must be ${SIGN_ALG}`);
  if (appId !== undefined) {
    if (appId.length < 1 || appId.length > 64)
      return reject('malformed_header', `${name.appId} must be 1 to 64 characters`);
    if (!opts.environments.some((e) => e.appId === undefined || e.appId === appId))
      return reject('malformed_header', `${name.appId} is not the platform's`);
  }

  const timestampMs = Number(timestamp);
  if (outsideWindow(timestampMs, nowMs, opts))
    return reject('timestamp_outside_window', `${name.timestamp} is outside the allowed window`);

  const signatureHeaders: Record<string, string> = {
    [name.timestamp]: timestamp,
    [name.nonce]: nonce,
    [name.sign]: sign,
  };
  if (appId !== undefined) signatureHeaders[name.appId] = appId;
  if (signAlg !== undefined) signatureHeaders[name.signAlg] = signAlg;
  return { scheme: 'current', timestamp, timestampMs, nonce, signature, signatureHeaders };
}

function outsideWindow(timestampMs: number, nowMs: number, opts: VerifierOptions): boolean {
  return Math.abs(nowMs - timestampMs) > opts.toleranceMs;
}

/**
 * The body's part, for headers that passed `checkCurrentHeaders`: the window again with the clock
 * after the body was read (cheap, and a request cannot outlive it by taking long to send), then the
 * signature over the five-line string.
 */
export function verifyCurrentBody(checked: CurrentHeaders, req: SignedRequest, opts: VerifierOptions): VerifyResult {
  if (outsideWindow(checked.timestampMs, req.nowMs, opts)) {
    return reject('timestamp_outside_window', `${namesOf(opts.headerPrefix).timestamp} is outside the allowed window`);
  }
  const data = currentStringToSign(req.method, req.target, checked.timestamp, checked.nonce, req.body);
  const verifying = verifyingEnvironment(opts.environments, checked.signature, () => data);
  if (!verifying) return reject('bad_signature', 'signature does not verify');
  const { environment, key } = verifying;
  const name = namesOf(opts.headerPrefix);
  const appId = checked.signatureHeaders[name.appId];
  if (appId !== undefined && environment.appId !== undefined && appId !== environment.appId) {
    return reject('malformed_header', `${name.appId} is not the ${environment.name} environment's`);
  }
  // The nonce is signed and unique per notification: it alone decides replay.
  return {
    ok: true,
    scheme: 'current',
    environment: environment.name,
    timestamp: checked.timestampMs,
    replayKey: checked.nonce,
    signatureHeaders: checked.signatureHeaders,
    key,
  };
}
