import { randomBytes, sign, type KeyObject } from 'node:crypto';
import { currentStringToSign } from '../signature/verify-current';
import { legacyStringToSign } from '../signature/verify-legacy';

function signBase64UrlEncoded(data: Buffer, privateKey: KeyObject | string): string {
  return encodeURIComponent(sign('sha256', data, privateKey).toString('base64'));
}

export function randomNonce(): string {
  return randomBytes(16).toString('hex');
}

export interface CurrentSignInput {
  privateKey: KeyObject | string;
  target: string;
  body: Buffer;
  timestamp?: number;
  nonce?: string;
  /** @defaultValue `x-svc` */
  headerPrefix?: string;
  appId?: string;
}

/** Signs as the platform does (spec 5.1) and returns the headers to send. */
export function signCurrent(input: CurrentSignInput): Record<string, string> {
  const prefix = input.headerPrefix ?? 'x-svc';
  const timestamp = String(input.timestamp ?? Date.now());
  const nonce = input.nonce ?? randomNonce();
  const headers: Record<string, string> = {
    [`${prefix}-timestamp`]: timestamp,
    [`${prefix}-nonce`]: nonce,
    [`${prefix}-sign`]: signBase64UrlEncoded(
      currentStringToSign('POST', input.target, timestamp, nonce, input.body),
      input.privateKey,
    ),
    [`${prefix}-sign-alg`]: 'SHA256_WITH_RSA',
  };
  if (input.appId) headers[`${prefix}-appid`] = input.appId;
  return headers;
}

/** Signs as the v1.2 scheme does (spec 5.2); the body must carry the integer `timestamp`. */
export function signLegacy(
  privateKey: KeyObject | string,
  merchantId: string,
  timestamp: number,
  body: Buffer,
): Record<string, string> {
  return {
    signature: signBase64UrlEncoded(legacyStringToSign(merchantId, timestamp, body), privateKey),
    type: 'RSA256',
    version: 'v1.2',
  };
}
