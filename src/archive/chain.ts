import { createHash } from 'node:crypto';

/**
 * The facts of one archived notification that its hash covers: everything the platform said and how
 * it was judged. `receipts` and `last_seen` change with each replay and are left out, as are the
 * delivery outcomes (a table of their own).
 */
export interface NotificationFacts {
  /** The first day of the month of `receivedAt` (UTC), `YYYY-MM-01`: each month is one chain. */
  month: string;
  /** The row's place in its month's chain, from 1. */
  seq: number;
  recordKey: string;
  receivedAt: Date;
  eventId: string;
  eventType: string;
  environment: string;
  scheme: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer;
  signedTimestamp: number;
  signedMerchantId: string | null;
  replayKey: string;
  keyFingerprint: string;
  outcome: string;
  reason: string | null;
  requestId: string | null;
}

/** A row's short name: its month and place in that month's chain, e.g. `2026-11/42`. */
export function archiveId(month: string, seq: number): string {
  return `${month.slice(0, 7)}/${seq}`;
}

/** Where each month's chain starts: a value only that month has, so rows cannot move between months unseen. */
export function genesis(month: string): Buffer {
  return createHash('sha256').update(`webhook_archive chain ${month}`).digest();
}

/**
 * SHA-256 over the previous row's hash and this row's facts (a JSON array in a fixed order, the
 * headers sorted by name, the body as its own SHA-256): changing, removing or inserting a row breaks
 * the link of the row after it, and the last row is held by the month's recorded head.
 */
export function rowHash(prev: Buffer, f: NotificationFacts): Buffer {
  const headers = Object.keys(f.headers)
    .sort()
    .map((name) => [name, f.headers[name]]);
  const facts = [
    f.month,
    f.seq,
    f.recordKey,
    f.receivedAt.toISOString(),
    f.eventId,
    f.eventType,
    f.environment,
    f.scheme,
    f.path,
    headers,
    createHash('sha256').update(f.body).digest('hex'),
    f.signedTimestamp,
    f.signedMerchantId,
    f.replayKey,
    f.keyFingerprint,
    f.outcome,
    f.reason,
    f.requestId,
  ];
  return createHash('sha256').update(prev).update(JSON.stringify(facts)).digest();
}

/** The month (`YYYY-MM-01`, UTC) a time falls in. */
export function monthOf(at: Date): string {
  return `${at.toISOString().slice(0, 7)}-01`;
}

/** The first day of the month after `month`. */
export function nextMonth(month: string): string {
  const [y, m] = month.split('-').map(Number) as [number, number];
  return m === 12 ? `${y + 1}-01-01` : `${y}-${String(m + 1).padStart(2, '0')}-01`;
}
