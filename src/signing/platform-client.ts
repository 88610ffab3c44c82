import type { KeyObject } from 'node:crypto';
import { decodeSignatureHeader } from '../signature/base64';
import { headerValue, type HeaderBag } from '../signature/headers';
import { verifyRsaSha256 } from '../signature/rsa';
import { currentStringToSign, SIGN_ALG } from '../signature/verify-current';
import { randomNonce, signCurrent } from './sign';

/**
 * A call to the platform's API and the check of its answer (spec 5.1): the merchant signs the request
 * with its private key, the platform signs its answer over the same five lines with the request's
 * method and path and the answer's own timestamp, nonce and body (rule 6). The service's inquiries,
 * the test stand-in of the platform and the merchant's tools all sign and check here.
 */
export interface PlatformRequestInput {
  /** The merchant's private key (PKCS#8). */
  privateKey: KeyObject | string;
  /** The request path (and query string) without the host, as signed. */
  path: string;
  body: Buffer;
  /** `<prefix>-appid`: the merchant's app id. */
  appId: string;
  /** `X-Merch-Id`, when the endpoint takes it. */
  merchantId?: string;
  /** @defaultValue `x-svc` */
  headerPrefix?: string;
  timestamp?: number;
  nonce?: string;
}

/** The headers of a signed request to the platform. */
export function signPlatformRequest(input: PlatformRequestInput): Record<string, string> {
  return {
    'content-type': 'application/json',
    ...signCurrent({
      privateKey: input.privateKey,
      target: input.path,
      body: input.body,
      headerPrefix: input.headerPrefix,
      appId: input.appId,
      timestamp: input.timestamp,
      nonce: input.nonce ?? randomNonce(),
    }),
    ...(input.merchantId !== undefined ? { 'x-merch-id': input.merchantId } : {}),
  };
}

/** The headers of a signed answer (the platform's side: the test stand-in signs its answers so). */
export function signPlatformResponse(
  input: Omit<PlatformRequestInput, 'appId' | 'merchantId'>,
): Record<string, string> {
  const { [`${input.headerPrefix ?? 'x-svc'}-sign-alg`]: _alg, ...headers } = signCurrent({
    privateKey: input.privateKey,
    target: input.path,
    body: input.body,
    headerPrefix: input.headerPrefix,
    timestamp: input.timestamp,
    nonce: input.nonce ?? randomNonce(),
  });
  return { 'content-type': 'application/json', ...headers };
}

/** Why an answer is not believed; also the `reason` label of the refusal counter. */
export type ResponseRefusal = 'unsigned' | 'malformed' | 'stale' | 'bad_signature';

export type CheckedResponse =
  | { ok: true; timestamp: number; nonce: string; signatureHeaders: Record<string, string> }
  | { ok: false; reason: ResponseRefusal; detail: string };

export interface ResponseToCheck {
  /** The request's method and path, which the answer's signature covers. */
  method: string;
  path: string;
  headers: HeaderBag;
  body: Buffer;
  /** The platform's public keys (several during a rotation). */
  keys: readonly KeyObject[];
  nowMs: number;
  /** How far the answer's timestamp may be from now. */
  toleranceMs: number;
  /** @defaultValue `x-svc` */
  headerPrefix?: string;
}

const TIMESTAMP = /^\d{1,13}$/;

/**
 * Rule 6: the answer's signature over method, path, its timestamp, its nonce and its body, with the
 * platform's key; its timestamp within the window. Whether its nonce was seen before is the caller's
 * to decide, after this (so an answer nobody signed cannot use up a nonce).
 */
export function verifyPlatformResponse(r: ResponseToCheck): CheckedResponse {
  const prefix = r.headerPrefix ?? 'x-svc';
  const timestamp = headerValue(r.headers, `${prefix}-timestamp`);
  const nonce = headerValue(r.headers, `${prefix}-nonce`);
  const sign = headerValue(r.headers, `${prefix}-sign`);
  if (timestamp === undefined || nonce === undefined || sign === undefined || sign === '') {
    return { ok: false, reason: 'unsigned', detail: `the answer lacks ${prefix}-timestamp, -nonce or -sign` };
  }
  if (!TIMESTAMP.test(timestamp)) return { ok: false, reason: 'malformed', detail: `${prefix}-timestamp is not ms` };
  if (nonce.length < 10 || nonce.length > 100) {
    return { ok: false, reason: 'malformed', detail: `${prefix}-nonce must be 10 to 100 characters` };
  }
  const signAlg = headerValue(r.headers, `${prefix}-sign-alg`);
  if (signAlg !== undefined && signAlg !== SIGN_ALG) {
    return { ok: false, reason: 'malformed', detail: `${prefix}-sign-alg must be ${SIGN_ALG}` };
  }
  const signature = sign.length <= 500 ? decodeSignatureHeader(sign) : undefined;
  if (!signature) return { ok: false, reason: 'malformed', detail: `${prefix}-sign is not canonical Base64` };
  const data = currentStringToSign(r.method, r.path, timestamp, nonce, r.body);
  if (!verifyRsaSha256(data, signature, r.keys)) {
    return { ok: false, reason: 'bad_signature', detail: "the answer's signature does not verify" };
  }
  if (Math.abs(r.nowMs - Number(timestamp)) > r.toleranceMs) {
    return { ok: false, reason: 'stale', detail: `${prefix}-timestamp is outside the allowed window` };
  }
  return {
    ok: true,
    timestamp: Number(timestamp),
    nonce,
    signatureHeaders: { [`${prefix}-timestamp`]: timestamp, [`${prefix}-nonce`]: nonce, [`${prefix}-sign`]: sign },
  };
}
