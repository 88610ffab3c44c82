import type { Pool, PoolClient } from 'pg';
import { SCHEMA } from './migrations';
import { inTransaction } from '../postgres/transaction';
import { ensurePartitions } from './partitions';
import { genesis, monthOf, rowHash, type NotificationFacts } from './chain';
import type { NewNotification, Replay, SortedEntries } from './entries';
import type { DeliveryOutcomeRecord } from '../model/archive';
import { insertExpectations } from './expectation-rows';
import { ServiceError } from '../model/errors';

export interface BatchWritten {
  notifications: number;
  replays: number;
  deliveries: number;
  /** Changes of expectations. */
  expectations: number;
}

/** A new row linked into its month's chain. */
interface Linked {
  facts: NotificationFacts;
  prevHash: Buffer;
  rowHash: Buffer;
}

/** The columns of a notification row as written: name, type (for `unnest()`) and value. */
const NOTIFICATION_COLUMNS: readonly (readonly [string, string, (r: Linked) => unknown])[] = [
  ['month', 'date', (r) => r.facts.month],
  ['seq', 'bigint', (r) => r.facts.seq],
  ['record_key', 'text', (r) => r.facts.recordKey],
  ['received_at', 'timestamptz', (r) => r.facts.receivedAt],
  ['event_id', 'text', (r) => r.facts.eventId],
  ['event_type', 'text', (r) => r.facts.eventType],
  ['environment', 'text', (r) => r.facts.environment],
  ['scheme', 'text', (r) => r.facts.scheme],
  ['path', 'text', (r) => r.facts.path],
  ['headers', 'jsonb', (r) => JSON.stringify(r.facts.headers)],
  ['body', 'bytea', (r) => r.facts.body],
  ['signed_timestamp', 'bigint', (r) => r.facts.signedTimestamp],
  ['signed_merchant_id', 'text', (r) => r.facts.signedMerchantId],
  ['replay_key', 'text', (r) => r.facts.replayKey],
  ['key_fingerprint', 'text', (r) => r.facts.keyFingerprint],
  ['outcome', 'text', (r) => r.facts.outcome],
  ['reason', 'text', (r) => r.facts.reason],
  ['request_id', 'text', (r) => r.facts.requestId],
  ['prev_hash', 'bytea', (r) => r.prevHash],
  ['row_hash', 'bytea', (r) => r.rowHash],
];

/**
 * One statement for any number of rows: an array per column, unnested into rows (a multi-row VALUES
 * would need a parameter per cell, parsed and planned again for each batch size). `last_seen` starts
 * at the receipt time.
 */
const INSERT_NOTIFICATIONS = `INSERT INTO ${SCHEMA}.notifications
    (${NOTIFICATION_COLUMNS.map(([name]) => name).join(', ')}, last_seen)
  SELECT *, received_at FROM unnest(${NOTIFICATION_COLUMNS.map(([, type], i) => `$${i + 1}::${type}[]`).join(', ')})
    AS t(${NOTIFICATION_COLUMNS.map(([name]) => name).join(', ')})
  ON CONFLICT DO NOTHING`;

const INSERT_DELIVERIES = `INSERT INTO ${SCHEMA}.deliveries (event_id, target, state, attempts, ended_at)
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::integer[], $5::timestamptz[])
  ON CONFLICT DO NOTHING`;

/** Rolls a batch's transaction back when one of its rows was archived already (see {@link writeBatch}). */
class ArchivedBefore extends Error {}

/**
 * Writes a batch in one transaction: the keys, the new notification rows (one statement, `ON CONFLICT DO
 * NOTHING`) each linked into its month's chain, the replays counted on their rows, the delivery outcomes
 * and the expectations as changed. A row is linked into its chain once: the batch is first written as if
 * none of its rows were archived (the usual case, and one query fewer); should any be (an entry written
 * again after a crash, or by two archivers at once), the transaction is rolled back and written again,
 * leaving out the rows found under the lock of their months' chain heads.
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
  const write = (findArchived: boolean) =>
    inTransaction(pool, async (client) => {
      await upsertKeys(client, batch.notifications);
      const notifications = await insertNotifications(client, batch.notifications, findArchived);
      let replays = 0;
      for (const replay of batch.replays) replays += await countReplay(client, replay);
      const deliveries = await insertDeliveries(client, batch.deliveries);
      const expectations = await insertExpectations(client, batch.expectations);
      return { notifications, replays, deliveries, expectations };
    });
  try {
    return await write(false);
  } catch (err) {
    if (!(err instanceof ArchivedBefore)) throw err;
    return write(true);
  }
}

/**
 * Each key that verified a row of the batch, with the first and last time it did. A key whose PEM the
 * batch does not carry (the key registry lost it) must be in the keys table already, or the batch waits:
 * no row is written without its key.
 */
async function upsertKeys(client: PoolClient, rows: readonly NewNotification[]): Promise<void> {
  const keys = new Map<string, { row: NewNotification; pem?: string; first: number; last: number }>();
  for (const row of rows) {
    const at = row.receivedAt.getTime();
    const key = keys.get(row.keyFingerprint);
    if (!key) keys.set(row.keyFingerprint, { row, pem: row.keyPem, first: at, last: at });
    else {
      [key.first, key.last] = [Math.min(key.first, at), Math.max(key.last, at)];
      key.pem ??= row.keyPem;
    }
  }
  for (const [fingerprint, { row, pem, first, last }] of keys) {
    if (pem === undefined) {
      const known = await client.query(
        `UPDATE ${SCHEMA}.keys SET first_used = LEAST(first_used, $2), last_used = GREATEST(last_used, $3)
          WHERE fingerprint = $1`,
        [fingerprint, new Date(first), new Date(last)],
      );
      if (known.rowCount === 0) throw new UnknownKeyError(fingerprint);
      continue;
    }
    await client.query(
      `INSERT INTO ${SCHEMA}.keys (fingerprint, pem, environment, first_used, last_used) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (fingerprint) DO UPDATE SET
         first_used = LEAST(keys.first_used, EXCLUDED.first_used),
         last_used = GREATEST(keys.last_used, EXCLUDED.last_used)`,
      [fingerprint, pem, row.environment, new Date(first), new Date(last)],
    );
  }
}

/** A row's key is neither in the archive's key registry nor in the keys table: its batch waits for it. */
export class UnknownKeyError extends ServiceError {
  readonly code = 'archive_key_unknown';
  readonly status = 503;
  constructor(readonly fingerprint: string) {
    super(
      `the key ${fingerprint} that verified a notification is neither in the archive's key registry in Redis nor ` +
        'in the keys table; the batch waits until a receiver publishes it again (within a minute of its next ' +
        'notification)',
    );
    Object.setPrototypeOf(this, new.target.prototype);
  }
}

/**
 * The batch's new rows, linked into their months' chains under the heads' lock. With `findArchived`,
 * rows already there are looked up first and left out; without, finding one throws {@link ArchivedBefore}.
 */
async function insertNotifications(
  client: PoolClient,
  rows: readonly NewNotification[],
  findArchived: boolean,
): Promise<number> {
  if (rows.length === 0) return 0;
  const unique = new Map(rows.map((r) => [r.recordKey, r]));
  const heads = await lockHeads(
    client,
    [...unique.values()].map((r) => monthOf(r.receivedAt)),
  );
  if (findArchived) for (const key of await archivedAlready(client, [...unique.values()])) unique.delete(key);
  if (unique.size === 0) return 0;
  const linked: Linked[] = [];
  for (const row of unique.values()) {
    const month = monthOf(row.receivedAt);
    const head = heads.get(month)!;
    const facts: NotificationFacts = { ...row, month, seq: head.seq + 1 };
    const hash = rowHash(head.hash, facts);
    linked.push({ facts, prevHash: head.hash, rowHash: hash });
    heads.set(month, { seq: facts.seq, hash });
  }
  const inserted = await client.query({
    name: 'archive-insert-notifications',
    text: INSERT_NOTIFICATIONS,
    values: NOTIFICATION_COLUMNS.map(([, , value]) => linked.map(value)),
  });
  if ((inserted.rowCount ?? 0) !== unique.size) throw new ArchivedBefore('a row of the batch is archived already');
  for (const [month, head] of heads) {
    await client.query(`UPDATE ${SCHEMA}.chain_heads SET seq = $2, hash = $3 WHERE month = $1`, [
      month,
      head.seq,
      head.hash,
    ]);
  }
  return unique.size;
}

/** The record keys of these rows that are archived already. */
async function archivedAlready(client: PoolClient, rows: readonly NewNotification[]): Promise<string[]> {
  const times = rows.map((r) => r.receivedAt.getTime());
  const { rows: found } = await client.query<{ record_key: string }>(
    `SELECT record_key FROM ${SCHEMA}.notifications
      WHERE record_key = ANY($1) AND received_at BETWEEN $2 AND $3`,
    [rows.map((r) => r.recordKey), new Date(Math.min(...times)), new Date(Math.max(...times))],
  );
  return found.map((r) => r.record_key);
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
  const inserted = await client.query({
    name: 'archive-insert-deliveries',
    text: INSERT_DELIVERIES,
    values: [
      outcomes.map((o) => o.eventId),
      outcomes.map((o) => o.target),
      outcomes.map((o) => o.state),
      outcomes.map((o) => o.attempts),
      outcomes.map((o) => new Date(o.at)),
    ],
  });
  return inserted.rowCount ?? 0;
}
