import type { Pool } from 'pg';
import { inTransaction } from '../postgres/transaction';
import { SCHEMA } from './migrations';
import { nextMonth } from './chain';
import { deleteExpectationsBefore } from './expectation-rows';

/** The partitioned tables, each by month of its time column. */
export const PARTITIONED = ['notifications', 'deliveries'] as const;
export type PartitionedTable = (typeof PARTITIONED)[number];

/** Serialises partition creation and removal across archivers. */
const PARTITION_LOCK = 0x77686170; // "whap"

function partitionName(table: PartitionedTable, month: string): string {
  return `${table}_${month.slice(0, 4)}_${month.slice(5, 7)}`;
}

/**
 * Creates the monthly partitions that are missing (each once per process: `known` remembers them), in
 * its own short transaction, so the write of a batch never waits on a table's creation lock.
 */
export async function ensurePartitions(
  pool: Pool,
  table: PartitionedTable,
  months: Iterable<string>,
  known: Set<string>,
): Promise<void> {
  const missing = [...new Set(months)].filter((m) => !known.has(`${table} ${m}`));
  if (missing.length === 0) return;
  await inTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [PARTITION_LOCK]);
    for (const month of missing) {
      // Names and bounds are built from validated YYYY-MM-01 strings only, never from a request.
      if (!/^\d{4}-\d{2}-01$/.test(month)) throw new Error(`not a month: ${month}`);
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${SCHEMA}.${partitionName(table, month)} PARTITION OF ${SCHEMA}.${table}
           FOR VALUES FROM ('${month}') TO ('${nextMonth(month)}')`,
      );
    }
  });
  for (const month of missing) known.add(`${table} ${month}`);
}

/**
 * Retention without scanning a table: every monthly partition wholly older than `cutoff` is dropped.
 * A notification month's chain head moves to `chain_cuts`, so `archive verify` knows the month was cut,
 * not lost. Returns the months dropped.
 */
export async function dropMonthsBefore(pool: Pool, cutoff: Date, known: Set<string>): Promise<string[]> {
  return inTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [PARTITION_LOCK]);
    const { rows } = await client.query<{ name: string; parent: string }>(
      `SELECT c.relname AS name, p.relname AS parent
         FROM pg_inherits i
         JOIN pg_class c ON c.oid = i.inhrelid
         JOIN pg_class p ON p.oid = i.inhparent
         JOIN pg_namespace n ON n.oid = p.relnamespace
        WHERE n.nspname = $1 AND p.relname = ANY($2)`,
      [SCHEMA, PARTITIONED],
    );
    const dropped: string[] = [];
    for (const { name, parent } of rows) {
      const match = /_(\d{4})_(\d{2})$/.exec(name);
      if (!match) continue;
      const month = `${match[1]}-${match[2]}-01`;
      if (new Date(`${nextMonth(month)}T00:00:00Z`) > cutoff) continue;
      await client.query(`DROP TABLE ${SCHEMA}.${name}`);
      known.delete(`${parent} ${month}`);
      if (parent === 'notifications') {
        await client.query(
          `INSERT INTO ${SCHEMA}.chain_cuts (month, seq, hash)
             SELECT month, seq, hash FROM ${SCHEMA}.chain_heads WHERE month = $1
           ON CONFLICT (month) DO NOTHING`,
          [month],
        );
        await client.query(`DELETE FROM ${SCHEMA}.chain_heads WHERE month = $1`, [month]);
        dropped.push(month);
      }
    }
    await client.query(`DELETE FROM ${SCHEMA}.receipts WHERE seen_at < $1`, [cutoff]);
    await deleteExpectationsBefore(client, cutoff);
    return dropped;
  });
}
