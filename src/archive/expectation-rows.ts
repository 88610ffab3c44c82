import type { Pool, PoolClient } from 'pg';
import type { ExpectationRecord } from '../model/archive';
import { SCHEMA } from './migrations';

const at = (ms: string | undefined) => new Date(Number(ms));

/**
 * Writes expectations as their changes left them: each change once (`expectation_changes`, `ON CONFLICT DO
 * NOTHING`, so an entry written again after a crash adds nothing), and the newest of each in `expectations`
 * (a change older than the row's is left out, whatever order the entries came in). Returns the changes
 * written now.
 */
export async function insertExpectations(client: PoolClient, records: readonly ExpectationRecord[]): Promise<number> {
  if (records.length === 0) return 0;
  const changes = new Map<string, ExpectationRecord>();
  const newest = new Map<string, ExpectationRecord>();
  for (const r of records) {
    changes.set(`${r.id} ${r.rev}`, r);
    const known = newest.get(r.id!);
    if (!known || Number(known.rev) < Number(r.rev)) newest.set(r.id!, r);
  }
  const changeValues: unknown[] = [];
  const changeTuples = [...changes.values()].map((r, i) => {
    changeValues.push(r.id, Number(r.rev), r.state, at(r.updatedAt ?? r.createdAt), JSON.stringify(r));
    return `($${i * 5 + 1}, $${i * 5 + 2}, $${i * 5 + 3}, $${i * 5 + 4}, $${i * 5 + 5})`;
  });
  const written = await client.query(
    `INSERT INTO ${SCHEMA}.expectation_changes (expectation_id, revision, state, changed_at, facts)
     VALUES ${changeTuples.join(', ')} ON CONFLICT DO NOTHING`,
    changeValues,
  );
  const rowValues: unknown[] = [];
  const rowTuples = [...newest.values()].map((r, i) => {
    rowValues.push(
      r.id,
      r.eventType,
      r.environment,
      r.requestId,
      r.state,
      at(r.dueBy),
      at(r.createdAt),
      at(r.updatedAt ?? r.createdAt),
      Number(r.rev),
      JSON.stringify(r),
    );
    return `(${Array.from({ length: 10 }, (_, k) => `$${i * 10 + k + 1}`).join(', ')})`;
  });
  await client.query(
    `INSERT INTO ${SCHEMA}.expectations
       (id, event_type, environment, request_id, state, due_by, created_at, updated_at, revision, facts)
     VALUES ${rowTuples.join(', ')}
     ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, updated_at = EXCLUDED.updated_at,
       revision = EXCLUDED.revision, facts = EXCLUDED.facts, archived_at = now()
     WHERE expectations.revision < EXCLUDED.revision`,
    rowValues,
  );
  return written.rowCount ?? 0;
}

const MAX_ROWS = 50;

/** An archived expectation's fields as last archived, by its id. */
export async function archivedExpectation(pool: Pool, id: string): Promise<ExpectationRecord | undefined> {
  const { rows } = await pool.query<{ facts: ExpectationRecord }>(
    `SELECT facts FROM ${SCHEMA}.expectations WHERE id = $1`,
    [id],
  );
  return rows[0]?.facts;
}

/** The archived expectations of a request_id, newest first. */
export async function archivedExpectationsOf(pool: Pool, requestId: string): Promise<ExpectationRecord[]> {
  const { rows } = await pool.query<{ facts: ExpectationRecord }>(
    `SELECT facts FROM ${SCHEMA}.expectations WHERE request_id = $1 ORDER BY created_at DESC LIMIT ${MAX_ROWS}`,
    [requestId],
  );
  return rows.map((r) => r.facts);
}

/** Expectations created before the cutoff, and their changes, removed (retention). */
export async function deleteExpectationsBefore(client: PoolClient, cutoff: Date): Promise<void> {
  await client.query(
    `DELETE FROM ${SCHEMA}.expectation_changes c USING ${SCHEMA}.expectations e
      WHERE c.expectation_id = e.id AND e.created_at < $1`,
    [cutoff],
  );
  await client.query(`DELETE FROM ${SCHEMA}.expectations WHERE created_at < $1`, [cutoff]);
}
