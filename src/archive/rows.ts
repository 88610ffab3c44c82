import type { Pool } from 'pg';
import { archiveId, type NotificationFacts } from './chain';
import { SCHEMA } from './migrations';

/** A notification row as read back: its facts, chain links and counts. */
export interface ArchivedNotification extends NotificationFacts {
  /** `YYYY-MM/seq`: its month and place in that month's chain. */
  id: string;
  prevHash: Buffer;
  rowHash: Buffer;
  receipts: number;
  lastSeen: Date;
  archivedAt: Date;
}

/** A delivery's final state as the archive keeps it. */
export interface ArchivedDelivery {
  target: string;
  state: string;
  attempts: number;
  endedAt: string;
}

/** The columns every read selects, the month as text (node-postgres would make a `date` a local-time Date). */
export const ROW_COLUMNS = `to_char(month, 'YYYY-MM-DD') AS month, seq, record_key, received_at, event_id, event_type,
  environment, scheme, path, headers, body, signed_timestamp, signed_merchant_id, replay_key, key_fingerprint,
  outcome, reason, request_id, receipts, last_seen, archived_at, prev_hash, row_hash`;

interface RawRow {
  month: string;
  seq: string;
  record_key: string;
  received_at: Date;
  event_id: string;
  event_type: string;
  environment: string;
  scheme: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer;
  signed_timestamp: string;
  signed_merchant_id: string | null;
  replay_key: string;
  key_fingerprint: string;
  outcome: string;
  reason: string | null;
  request_id: string | null;
  receipts: number;
  last_seen: Date;
  archived_at: Date;
  prev_hash: Buffer;
  row_hash: Buffer;
}

export function rowOf(r: RawRow): ArchivedNotification {
  const seq = Number(r.seq);
  return {
    id: archiveId(r.month, seq),
    month: r.month,
    seq,
    recordKey: r.record_key,
    receivedAt: r.received_at,
    eventId: r.event_id,
    eventType: r.event_type,
    environment: r.environment,
    scheme: r.scheme,
    path: r.path,
    headers: r.headers,
    body: r.body,
    signedTimestamp: Number(r.signed_timestamp),
    signedMerchantId: r.signed_merchant_id,
    replayKey: r.replay_key,
    keyFingerprint: r.key_fingerprint,
    outcome: r.outcome,
    reason: r.reason,
    requestId: r.request_id,
    receipts: r.receipts,
    lastSeen: r.last_seen,
    archivedAt: r.archived_at,
    prevHash: r.prev_hash,
    rowHash: r.row_hash,
  };
}

/** Rows matching a parameterised condition on the notifications table, oldest first. */
export async function selectRows(
  pool: Pool,
  where: string,
  params: unknown[],
  limit = 100,
): Promise<ArchivedNotification[]> {
  const { rows } = await pool.query<RawRow>(
    `SELECT ${ROW_COLUMNS} FROM ${SCHEMA}.notifications
      WHERE ${where} ORDER BY received_at, seq LIMIT ${Math.floor(limit)}`,
    params,
  );
  return rows.map(rowOf);
}

/** The delivery outcomes of these events, by event id, in the order they ended. */
export async function deliveriesOf(pool: Pool, eventIds: readonly string[]): Promise<Map<string, ArchivedDelivery[]>> {
  const { rows } = await pool.query<{
    event_id: string;
    target: string;
    state: string;
    attempts: number;
    ended_at: Date;
  }>(
    `SELECT event_id, target, state, attempts, ended_at FROM ${SCHEMA}.deliveries
      WHERE event_id = ANY($1) ORDER BY ended_at, target`,
    [[...eventIds]],
  );
  const byEvent = new Map<string, ArchivedDelivery[]>();
  for (const r of rows) {
    const list = byEvent.get(r.event_id) ?? [];
    list.push({ target: r.target, state: r.state, attempts: r.attempts, endedAt: r.ended_at.toISOString() });
    byEvent.set(r.event_id, list);
  }
  return byEvent;
}
