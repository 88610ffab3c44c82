import type { QuarantineReason, SignatureScheme } from './jobs';

/** Which key verified a notification, and how the legacy string was signed: what the archive needs beyond the job. */
export interface Evidence {
  /** SHA-256 (hex) of the DER (SPKI) encoding of the public key that verified it. */
  keyFingerprint: string;
  /** That key as PEM, so the archive holds it even after a rotation took it out of the configuration. */
  keyPem: string;
  /** Legacy scheme: the merchant id signed into the string. */
  signedMerchantId?: string;
  /** The body's `request_id` (top level, else `data.request_id`), when it parsed and has one. */
  requestId?: string;
}

/**
 * One acknowledged notification as the ingest script appends it to the archive stream (JSON, field `r`),
 * beside the script's decision and the job data it added (field `b`: the body and the headers as
 * received, which the record leaves to it so the body travels once). The key's PEM is not in it either:
 * the producer publishes each key once to the archive's key registry (ownKeys.archiveKeys).
 */
export interface ArchiveRecord extends Omit<Evidence, 'keyPem'> {
  kind: 'event' | 'quarantine';
  eventId: string;
  eventType: string;
  environment: string;
  scheme: SignatureScheme;
  path: string;
  /** The replay key: the nonce, or `sig:<sha256>` of a legacy signature. */
  replayKey: string;
  /** The signed timestamp, ms. */
  timestamp: number;
  receivedAt: string;
  reason?: QuarantineReason;
  /** Quarantine: the job id a new one gets; another one in the decision means the event was quarantined before. */
  jobId?: string;
  /** The subscribed targets whose filter left the event out at receipt: their delivery ended there. */
  filtered?: string[];
  /** Entries written before the job data was beside the record carried these themselves. */
  keyPem?: string;
  /** The body as received, Base64 (older entries only). */
  body?: string;
  /** Every header the signature covers, plus `content-type` and `x-merch-id` (older entries only). */
  headers?: Record<string, string>;
}

/** What the ingest script decided for a record (`added` carries the first job id). */
export type ArchiveDecision = 'added' | 'duplicate' | 'conflict' | 'replay';

/** How a delivery ended, as the archive keeps it. */
export type DeliveryEnd = 'delivered' | 'dead_lettered' | 'discarded' | 'filtered' | 'dropped';

/** A delivery's final state, appended to the archive stream by whoever ended it. */
export interface DeliveryOutcomeRecord {
  eventId: string;
  target: string;
  state: DeliveryEnd;
  attempts: number;
  /** When it ended (ISO 8601). */
  at: string;
}

/**
 * The archive stream's entry fields: `d` the decision (or `delivery`), `j` a job id, `r` the record's JSON,
 * `b` the job data a notification's entry reads its body and headers from.
 */
export const ARCHIVE_DELIVERY = 'delivery';

/**
 * The entry kind (`d`) of an expectation as one of its changes left it, appended by the expectation's own
 * script (reconciliation/lua/expect-archive.lua): `r` holds its fields as Redis keeps them (strings; times in
 * ms since 1970), `rev` numbering its changes.
 */
export const ARCHIVE_EXPECTATION = 'expectation';

/** An expectation's fields as its archive entry carries them. */
export type ExpectationRecord = Readonly<Record<string, string>>;
