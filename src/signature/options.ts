import type { KeyObject } from 'node:crypto';
import type { SignatureScheme } from './result';

export interface VerifierOptions {
  /** Platform public keys, tried in turn. */
  keys: readonly KeyObject[];
  /** Header name prefix of the current scheme. @defaultValue `x-svc` */
  headerPrefix: string;
  /** When set, a present `<prefix>-appid` header must equal it. */
  appId?: string;
  /** The merchant id, signed into the legacy v1.2 string. */
  merchantId?: string;
  /** Accepted schemes. @defaultValue `current` only */
  schemes: readonly SignatureScheme[];
  /** Allowed distance between the signed timestamp and now. @defaultValue 300000 (5 minutes) */
  toleranceMs: number;
}

export interface SignedRequest {
  method: string;
  /** The request target exactly as received: path plus `?` and query string. */
  target: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  nowMs: number;
}
