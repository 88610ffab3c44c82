import type { Pool } from 'pg';
import { ServiceError } from '../model/errors';
import { inTransaction } from '../postgres/transaction';

/** The schema every table of the archive lives in. */
export const SCHEMA = 'webhook_archive';

/** Taken (transaction-scoped) while migrating, so several processes starting at once migrate once. */
const MIGRATION_LOCK = 0x77686172; // "whar"

/**
 * The archive's schema, one numbered step after another; a step is never edited once released, a
 * change is a new step. Each runs in the transaction that records it. A table per concept:
 * notifications (monthly partitions, each month its own hash chain), the keys that verified them,
 * replays counted on their notification, delivery outcomes (monthly partitions), the chains' heads
 * and the months retention removed; expectations of notifications (the newest state of each) and each of
 * their changes.
 */
export const MIGRATIONS: readonly { version: number; name: string; sql: string }[] = [
  {
    version: 1,
    name: 'notifications, keys, receipts, deliveries, chains',
    sql: `
      CREATE TABLE ${SCHEMA}.keys (
        fingerprint text PRIMARY KEY,
        pem text NOT NULL,
        environment text NOT NULL,
        first_used timestamptz NOT NULL,
        last_used timestamptz NOT NULL
      );
      CREATE TABLE ${SCHEMA}.notifications (
        month date NOT NULL,
        seq bigint NOT NULL,
        record_key text NOT NULL,
        received_at timestamptz NOT NULL,
        event_id text NOT NULL,
        event_type text NOT NULL,
        environment text NOT NULL,
        scheme text NOT NULL,
        path text NOT NULL,
        headers jsonb NOT NULL,
        body bytea NOT NULL,
        signed_timestamp bigint NOT NULL,
        signed_merchant_id text,
        replay_key text NOT NULL,
        key_fingerprint text NOT NULL,
        outcome text NOT NULL,
        reason text,
        request_id text,
        receipts integer NOT NULL DEFAULT 1,
        last_seen timestamptz NOT NULL,
        archived_at timestamptz NOT NULL DEFAULT now(),
        prev_hash bytea NOT NULL,
        row_hash bytea NOT NULL,
        PRIMARY KEY (record_key, received_at)
      ) PARTITION BY RANGE (received_at);
      CREATE INDEX ON ${SCHEMA}.notifications (month, seq);
      CREATE INDEX ON ${SCHEMA}.notifications (event_id);
      CREATE INDEX ON ${SCHEMA}.notifications (request_id) WHERE request_id IS NOT NULL;
      CREATE INDEX ON ${SCHEMA}.notifications (replay_key);
      CREATE TABLE ${SCHEMA}.receipts (
        entry_id text NOT NULL,
        scheme text NOT NULL,
        replay_key text NOT NULL,
        seen_at timestamptz NOT NULL,
        PRIMARY KEY (entry_id, replay_key)
      );
      CREATE INDEX ON ${SCHEMA}.receipts (seen_at);
      CREATE TABLE ${SCHEMA}.deliveries (
        event_id text NOT NULL,
        target text NOT NULL,
        state text NOT NULL,
        attempts integer NOT NULL,
        ended_at timestamptz NOT NULL,
        PRIMARY KEY (event_id, target, state, ended_at)
      ) PARTITION BY RANGE (ended_at);
      CREATE TABLE ${SCHEMA}.chain_heads (
        month date PRIMARY KEY,
        seq bigint NOT NULL,
        hash bytea NOT NULL
      );
      CREATE TABLE ${SCHEMA}.chain_cuts (
        month date PRIMARY KEY,
        seq bigint NOT NULL,
        hash bytea NOT NULL,
        cut_at timestamptz NOT NULL DEFAULT now()
      );`,
  },
  {
    version: 2,
    name: 'expectations and their changes',
    sql: `
      CREATE TABLE ${SCHEMA}.expectations (
        id text PRIMARY KEY,
        event_type text NOT NULL,
        environment text NOT NULL,
        request_id text NOT NULL,
        state text NOT NULL,
        due_by timestamptz NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        revision integer NOT NULL,
        facts jsonb NOT NULL,
        archived_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX ON ${SCHEMA}.expectations (request_id);
      CREATE INDEX ON ${SCHEMA}.expectations (created_at);
      CREATE TABLE ${SCHEMA}.expectation_changes (
        expectation_id text NOT NULL,
        revision integer NOT NULL,
        state text NOT NULL,
        changed_at timestamptz NOT NULL,
        facts jsonb NOT NULL,
        PRIMARY KEY (expectation_id, revision)
      );`,
  },
];

/** The archive holds a schema newer than this code knows: refused rather than written with old assumptions. */
export class ArchiveSchemaTooNew extends ServiceError {
  readonly code = 'archive_schema_too_new';
  readonly status = 503;
  constructor(found: number, known: number) {
    super(`the archive's schema is at version ${found}; this version of the service knows ${known} at most`);
    Object.setPrototypeOf(this, new.target.prototype);
  }
}

/**
 * Applies the steps the database has not had yet, in one transaction under an advisory lock:
 * idempotent, and safe with several processes starting at once (the second waits, then finds
 * nothing to do). Returns the version now in place.
 */
export async function migrate(pool: Pool): Promise<number> {
  return inTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${SCHEMA}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${SCHEMA}.schema_migrations (
         version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const { rows } = await client.query<{ v: number | null }>(
      `SELECT max(version) AS v FROM ${SCHEMA}.schema_migrations`,
    );
    const current = rows[0]?.v ?? 0;
    const known = MIGRATIONS[MIGRATIONS.length - 1]?.version ?? 0;
    if (current > known) throw new ArchiveSchemaTooNew(current, known);
    for (const step of MIGRATIONS.filter((m) => m.version > current)) {
      await client.query(step.sql);
      await client.query(`INSERT INTO ${SCHEMA}.schema_migrations (version, name) VALUES ($1, $2)`, [
        step.version,
        step.name,
      ]);
    }
    return known;
  });
}
