import type { KeyObject } from 'node:crypto';
import type { SignatureScheme } from '../model/jobs';

/** One platform environment's part in verification: a notification belongs to the one whose key verifies it. */
export interface VerifierEnvironment {
  name: string;
  /** Its public keys, tried in turn (several during a rotation). */
  keys: readonly KeyObject[];
  /** When set, a present `<prefix>-appid` header must equal it. */
  appId?: string;
  /** The merchant id signed into the legacy v1.2 string. */
  merchantId?: string;
}

export interface VerifierOptions {
  /** The platform's environments, each with its keys; a key belongs to one only. */
  environments: readonly VerifierEnvironment[];
  /** Header name prefix of the current scheme. @defaultValue `x-svc` */
  headerPrefix: string;
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
