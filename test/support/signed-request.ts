import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import type { SignedRequest, VerifierOptions } from '../../src/signature/options';
import { currentStringToSign } from '../../src/signature/verify-current';
import { legacyStringToSign } from '../../src/signature/verify-legacy';

export const NOW_MS = 1_795_000_000_000;
export const MERCHANT_ID = 'M100023';
export const TARGET = '/api/v2/merch/pay/notify';

export interface KeyPair {
  privateKey: KeyObject;
  publicKey: KeyObject;
}

export function rsaKeyPair(): KeyPair {
  return generateKeyPairSync('rsa', { modulusLength: 2048 });
}

/** The one environment's settings of {@link verifierOptions}; override one per case (`undefined` removes it). */
export interface EnvironmentOverrides {
  appId?: string | undefined;
  merchantId?: string | undefined;
}

/**
 * The verifier options the builder's requests are made for: one `production` environment with these
 * keys; override one field per case.
 */
export function verifierOptions(
  keys: readonly KeyObject[],
  over: Partial<VerifierOptions> & EnvironmentOverrides = {},
): VerifierOptions {
  const { appId: _appId, merchantId: _merchantId, ...rest } = over;
  const appId = 'appId' in over ? over.appId : 'platform-app';
  const merchantId = 'merchantId' in over ? over.merchantId : MERCHANT_ID;
  const environment = {
    name: 'production',
    keys,
    ...(appId !== undefined ? { appId } : {}),
    ...(merchantId !== undefined ? { merchantId } : {}),
  };
  return {
    environments: [environment],
    headerPrefix: 'x-svc',
    schemes: ['current', 'legacy'],
    toleranceMs: 300_000,
    ...rest,
  };
}

export interface CurrentFields {
  key: KeyObject;
  method?: string;
  target?: string;
  timestamp?: number;
  nonce?: string;
  body?: Buffer;
}

export type CurrentHeadersSent = {
  'x-svc-timestamp': string;
  'x-svc-nonce': string;
  'x-svc-sign': string;
  'x-svc-sign-alg': string;
  'x-svc-appid': string;
  'content-type': string;
};
export type LegacyHeadersSent = { signature: string; type: string; version: string; 'content-type': string };
export type Built<H> = Omit<SignedRequest, 'headers'> & { headers: H };

/** A genuine current-scheme request (spec 5.1), signed as the platform does. */
export function currentRequest(f: CurrentFields): Built<CurrentHeadersSent> {
  const method = f.method ?? 'POST';
  const target = f.target ?? TARGET;
  const timestamp = String(f.timestamp ?? NOW_MS);
  const nonce = f.nonce ?? '6f1c0d2b9e8a4f7c8d3e2a1b0c9d8e7f';
  const body = f.body ?? Buffer.from('{"type":"MERCH","data":{"request_id":"PAY1","status":"SUCCESS"}}');
  const signature = sign('sha256', currentStringToSign(method, target, timestamp, nonce, body), f.key).toString(
    'base64',
  );
  const headers = {
    'x-svc-timestamp': timestamp,
    'x-svc-nonce': nonce,
    'x-svc-sign': encodeURIComponent(signature),
    'x-svc-sign-alg': 'SHA256_WITH_RSA',
    'x-svc-appid': 'platform-app',
    'content-type': 'application/json',
  };
  return { method, target, headers, body, nowMs: NOW_MS };
}

export interface LegacyFields {
  key: KeyObject;
  merchantId?: string;
  /** The timestamp the string to sign carries; the body carries `bodyTimestamp` (default: the same). */
  timestamp?: number;
  body?: Buffer;
  target?: string;
}

export function legacyBody(timestamp: number, requestId = 'L1'): Buffer {
  return Buffer.from(
    `{"timestamp":${timestamp},"type":"MERCH","data":{"request_id":"${requestId}","status":"SUCCESS"}}`,
  );
}

/** A genuine v1.2 request (spec 5.2). */
export function legacyRequest(f: LegacyFields): Built<LegacyHeadersSent> {
  const timestamp = f.timestamp ?? NOW_MS;
  const body = f.body ?? legacyBody(timestamp);
  const signature = sign('sha256', legacyStringToSign(f.merchantId ?? MERCHANT_ID, timestamp, body), f.key).toString(
    'base64',
  );
  const headers = {
    signature: encodeURIComponent(signature),
    type: 'RSA256',
    version: 'v1.2',
    'content-type': 'application/json',
  };
  return { method: 'POST', target: f.target ?? TARGET, headers, body, nowMs: NOW_MS };
}

/** The same request with headers replaced or removed (`undefined`). */
export function withHeaders(req: SignedRequest, changes: Record<string, string | undefined>): SignedRequest {
  const headers: Record<string, string | string[] | undefined> = { ...req.headers };
  for (const [name, value] of Object.entries(changes)) {
    if (value === undefined) delete headers[name];
    else headers[name] = value;
  }
  return { ...req, headers };
}
