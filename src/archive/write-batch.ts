import type { Pool, PoolClient } from 'pg';
import { SCHEMA } from './migrations';
import { inTransaction } from '../postgres/transaction';
import { ensurePartitions } from './partitions';
import { genesis, monthOf, rowHash, type NotificationFacts } from './chain';
import type { NewNotification, Replay, SortedEntries } from './entries';
import type { DeliveryOutcomeRecord } from '../model/archive';
import { insertExpectations } from './expectation-rows';

export interface BatchWritten {
  notifications: number;
  replays: number;
  deliveries: number;
  /** Changes of expectations. */
  expectations: number;
}

const NOTIFICATION_COLUMNS = [
  'month',
  'seq',
  'record_key',
  'received_at',
  'event_id',
  'event_type',
  'environment',
  'scheme',
  'path',
  'headers',
  'body',
  'signed_timestamp',
  'signed_merchant_id',
  'replay_key',
  'key_fingerprint',
  'outcome',
  'reason',
  'request_id',
  'last_seen',
  'prev_hash',
  'row_hash',
] as const;

/**
 * Writes a batch in one transaction: the keys, the new notification rows (multi-row, `ON CONFLICT DO
 * NOTHING`) each linked into its month's chain, the replays counted on their rows, the delivery outcomes
 * and the expectations as changed. Rows already archived (an entry written again after a crash) are found
 * first and left out, under the lock of their months' chain heads, so each row enters its chain once.
 */
export async function writeBatch(pool: Pool, batch: SortedEntries, known: Set<string>): Promise<BatchWritten> {
  await ensurePartitions(
    pool,
    'notifications',
    batch.notifications.map((n) => monthOf(n.receivedAt)),
    known,
  );
  await ensurePartitions(
    pool,
    'deliveries',
    batch.deliveries.map((d) => monthOf(new Date(d.at))),
    known,
  );
  return inTransaction(pool, async (client) => {
    await upsertKeys(client, batch.notifications);
    const notifications = await insertNotifications(client, batch.notifications);
    let replays = 0;
    for (const replay of batch.replays) replays += await countReplay(client, replay);
    const deliveries = await insertDeliveries(client, batch.deliveries);
    const expectations = await insertExpectations(client, batch.expectations);
    return { notifications, replays, deliveries, expectations };
  });
}

async function upsertKeys(client: PoolClient, rows: readonly NewNotification[]): Promise<void> {
  const keys = new Map<string, NewNotification>();
  for (const row of rows) if (!keys.has(row.keyFingerprint)) keys.set(row.keyFingerprint, row);
  for (const row of keys.values()) {
    const times = rows.filter((r) => r.keyFingerprint === row.keyFingerprint).map((r) => r.receivedAt.getTime());
    await client.query(
      `INSERT INTO ${SCHEMA}.keys (fingerprint, pem, environment, first_used, last_used) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (fingerprint) DO UPDATE SET
         first_used = LEAST(keys.first_used, EXCLUDED.first_used),
         last_used = GREATEST(keys.last_used, EXCLUDED.last_used)`,
      [row.keyFingerprint, row.keyPem, row.environment, new Date(Math.min(...times)), new Date(Math.max(...times))],
    );
  }
}

async function insertNotifications(client: PoolClient, rows: readonly NewNotification[]): Promise<number> {
  if (rows.length === 0) return 0;
  const unique = new Map(rows.map((r) => [r.recordKey, r]));
  const times = rows.map((r) => r.receivedAt.getTime());
  const existing = await client.query<{ record_key: string }>(
    `SELECT record_key FROM ${SCHEMA}.notifications
      WHERE record_key = ANY($1) AND received_at BETWEEN $2 AND $3`,
    [[...unique.keys()], new Date(Math.min(...times)), new Date(Math.max(...times))],
  );
  for (const { record_key } of existing.rows) unique.delete(record_key);
  if (unique.size === 0) return 0;
  const fresh = [...unique.values()];
  const heads = await lockHeads(
    client,
    fresh.map((r) => monthOf(r.receivedAt)),
  );
  const values: unknown[] = [];
  const tuples: string[] = [];
  for (const row of fresh) {
    const month = monthOf(row.receivedAt);
    const head = heads.get(month)!;
    const facts: NotificationFacts = { ...row, month, seq: head.seq + 1 };
    const hash = rowHash(head.hash, facts);
    const params = [
      month,
      facts.seq,
      row.recordKey,
      row.receivedAt,
      row.eventId,
      row.eventType,
      row.environment,
      row.scheme,
      row.path,
      JSON.stringify(row.headers),
      row.body,
      row.signedTimestamp,
      row.signedMerchantId,
      row.replayKey,
      row.keyFingerprint,
      row.outcome,
      row.reason,
      row.requestId,
      row.receivedAt,
      head.hash,
      hash,
    ];
    tuples.push(`(${params.map((_, i) => `$${values.length + i + 1}`).join(', ')})`);
    values.push(...params);
    heads.set(month, { seq: facts.seq, hash });
  }
  const inserted = await client.query(
    `INSERT INTO ${SCHEMA}.notifications (${NOTIFICATION_COLUMNS.join(', ')}) VALUES ${tuples.join(', ')}
     ON CONFLICT DO NOTHING`,
    values,
  );
  for (const [month, head] of heads) {
    await client.query(`UPDATE ${SCHEMA}.chain_heads SET seq = $2, hash = $3 WHERE month = $1`, [
      month,
      head.seq,
      head.hash,
    ]);
  }
  return inserted.rowCount ?? 0;
}

/** The chain heads of these months, created at their genesis when new, locked until the transaction ends. */
async function lockHeads(client: PoolClient, months: readonly string[]) {
  const distinct = [...new Set(months)].sort();
  for (const month of distinct) {
    await client.query(
      `INSERT INTO ${SCHEMA}.chain_heads (month, seq, hash) VALUES ($1, 0, $2) ON CONFLICT (month) DO NOTHING`,
      [month, genesis(month)],
    );
  }
  const { rows } = await client.query<{ month: string; seq: string; hash: Buffer }>(
    `SELECT to_char(month, 'YYYY-MM-DD') AS month, seq, hash FROM ${SCHEMA}.chain_heads
      WHERE month = ANY($1::date[]) ORDER BY month FOR UPDATE`,
    [distinct],
  );
  return new Map(rows.map((r) => [r.month, { seq: Number(r.seq), hash: r.hash }]));
}

/** A replay counts once on the row of the request it repeats (the first with its replay key): 1 when counted now. */
async function countReplay(client: PoolClient, replay: Replay): Promise<number> {
  const receipt = await client.query(
    `INSERT INTO ${SCHEMA}.receipts (entry_id, scheme, replay_key, seen_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT DO NOTHING`,
    [replay.entryId, replay.scheme, replay.replayKey, replay.seenAt],
  );
  if (receipt.rowCount !== 1) return 0;
  await client.query(
    `UPDATE ${SCHEMA}.notifications SET receipts = receipts + 1, last_seen = GREATEST(last_seen, $3)
      WHERE (record_key, received_at) = (
        SELECT record_key, received_at FROM ${SCHEMA}.notifications
         WHERE replay_key = $2 AND scheme = $1 ORDER BY received_at LIMIT 1)`,
    [replay.scheme, replay.replayKey, replay.seenAt],
  );
  return 1;
}

async function insertDeliveries(client: PoolClient, outcomes: readonly DeliveryOutcomeRecord[]): Promise<number> {
  if (outcomes.length === 0) return 0;
  const values: unknown[] = [];
  const tuples = outcomes.map((o, i) => {
    values.push(o.eventId, o.target, o.state, o.attempts, new Date(o.at));
    const n = i * 5;
    return `($${n + 1}, $${n + 2}, $${n + 3}, $${n + 4}, $${n + 5})`;
  });
  const inserted = await client.query(
    `INSERT INTO ${SCHEMA}.deliveries (event_id, target, state, attempts, ended_at) VALUES ${tuples.join(', ')}
     ON CONFLICT DO NOTHING`,
    values,
  );
  return inserted.rowCount ?? 0;
}
