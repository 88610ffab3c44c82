import type { KeyObject } from 'node:crypto';
import type { SignatureScheme } from '../model/jobs';
/** Why a notification was refused; also the `reason` label of the rejection counter. */
export type RejectionReason =
  | 'missing_header'
  | 'malformed_header'
  | 'timestamp_outside_window'
  | 'missing_signature'
  | 'malformed_signature'
  | 'bad_signature'
  | 'malformed_merchant_id'
  | 'source_not_allowed';

/**
 * `request`: a malformed unsigned header (answered 400); `source`: an address not allowed (403); the others are
 * answered 401.
 */
export type RejectionClass = 'header' | 'timestamp' | 'signature' | 'request' | 'source';

export const REJECTION_CLASS: Record<RejectionReason, RejectionClass> = {
  missing_header: 'header',
  malformed_header: 'header',
  timestamp_outside_window: 'timestamp',
  missing_signature: 'signature',
  malformed_signature: 'signature',
  bad_signature: 'signature',
  malformed_merchant_id: 'request',
  source_not_allowed: 'source',
};

export interface Verified {
  ok: true;
  scheme: SignatureScheme;
  /** The platform environment whose key verified the signature. */
  environment: string;
  /** The signed timestamp, in milliseconds. */
  timestamp: number;
  /**
   * What identifies this exact request for replay detection: the nonce (current scheme), or
   * `sig:<sha256 hex of the decoded signature bytes>` (legacy), so no re-encoding of one signature
   * yields a second key, and no unsigned header takes part in it.
   */
  replayKey: string;
  /** The platform's signature headers as received, kept for pass-through forwarding. */
  signatureHeaders: Record<string, string>;
  /** The public key that verified the signature (the archive keeps which one). */
  key: KeyObject;
  /** Legacy scheme: the merchant id signed into the string (the archive rebuilds the string from it). */
  signedMerchantId?: string;
}

export interface Rejected {
  ok: false;
  reason: RejectionReason;
  /** A short human explanation, safe to return to the caller and to log. */
  detail: string;
}

export type VerifyResult = Verified | Rejected;

export function reject(reason: RejectionReason, detail: string): Rejected {
  return { ok: false, reason, detail };
}
