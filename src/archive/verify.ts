import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import type { Pool } from 'pg';
import { archiveId, genesis, monthOf, rowHash } from './chain';
import { SCHEMA } from './migrations';
import { ROW_COLUMNS, rowOf, type ArchivedNotification } from './rows';
import { signedBytesOf } from './signed-bytes';
import { keyIdentity } from '../signature/fingerprint';

export interface VerifyOptions {
  /** Only months from this one on, and signatures of rows received since. */
  since?: Date;
  /** Only this environment's signatures (every chain of the months is still walked whole). */
  environment?: string;
}

export interface BadRow {
  /** `YYYY-MM/seq` */
  id: string;
  problem: string;
}

export interface VerifyReport {
  months: number;
  rows: number;
  signaturesVerified: number;
  /** Months retention removed (their heads kept in chain_cuts). */
  monthsCut: number;
  bad: BadRow[];
}

const PAGE = 1000;

/**
 * Re-verifies the archive: each row's platform signature from its stored bytes and the stored key,
 * and each month's hash chain (a row changed, removed or inserted in SQL breaks it: see chain.ts).
 * Reads a month a page at a time in chain order.
 */
export async function verifyArchive(pool: Pool, opts: VerifyOptions = {}): Promise<VerifyReport> {
  const keys = await loadKeys(pool);
  const fromMonth = opts.since ? monthOf(opts.since) : '0001-01-01';
  const heads = await pool.query<{ month: string; seq: string; hash: Buffer }>(
    `SELECT to_char(month, 'YYYY-MM-DD') AS month, seq, hash FROM ${SCHEMA}.chain_heads
      WHERE month >= $1 ORDER BY month`,
    [fromMonth],
  );
  const report: VerifyReport = { months: heads.rows.length, rows: 0, signaturesVerified: 0, monthsCut: 0, bad: [] };
  const cut = await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${SCHEMA}.chain_cuts`);
  report.monthsCut = Number(cut.rows[0]?.n ?? 0);
  const headed = new Set(heads.rows.map((h) => h.month));
  const orphans = await pool.query<{ month: string; seq: string }>(
    `SELECT to_char(month, 'YYYY-MM-DD') AS month, seq FROM ${SCHEMA}.notifications
      WHERE month >= $1 AND NOT (month = ANY($2::date[])) ORDER BY month, seq`,
    [fromMonth, [...headed]],
  );
  for (const o of orphans.rows)
    report.bad.push({ id: archiveId(o.month, Number(o.seq)), problem: 'inserted: its month has no chain' });
  for (const head of heads.rows) {
    await verifyMonth(pool, head.month, { seq: Number(head.seq), hash: head.hash }, keys, opts, report);
  }
  return report;
}

async function verifyMonth(
  pool: Pool,
  month: string,
  head: { seq: number; hash: Buffer },
  keys: Map<string, KeyObject>,
  opts: VerifyOptions,
  report: VerifyReport,
): Promise<void> {
  let prev = genesis(month);
  let expected = 1;
  let last: ArchivedNotification | undefined;
  for (let after = 0; ;) {
    const { rows } = await pool.query(
      `SELECT ${ROW_COLUMNS} FROM ${SCHEMA}.notifications WHERE month = $1 AND seq > $2 ORDER BY seq LIMIT ${PAGE}`,
      [month, after],
    );
    if (rows.length === 0) break;
    for (const raw of rows) {
      const row = rowOf(raw);
      after = row.seq;
      report.rows++;
      if (row.seq < expected) {
        report.bad.push({ id: row.id, problem: 'inserted: a second row at this place in the chain' });
        continue;
      }
      if (row.seq > expected) {
        for (let s = expected; s < row.seq; s++) report.bad.push({ id: archiveId(month, s), problem: 'deleted' });
      } else if (!row.prevHash.equals(prev) && last) {
        report.bad.push({ id: last.id, problem: 'changed: the next row no longer links to it' });
      }
      if (!rowHash(row.prevHash, row).equals(row.rowHash))
        report.bad.push({ id: row.id, problem: 'changed: its facts no longer match its hash' });
      checkSignature(row, keys, opts, report);
      prev = row.rowHash;
      expected = row.seq + 1;
      last = row;
    }
  }
  if (expected - 1 < head.seq) {
    for (let s = expected; s <= head.seq; s++) report.bad.push({ id: archiveId(month, s), problem: 'deleted' });
  } else if (last && !prev.equals(head.hash)) {
    report.bad.push({ id: last.id, problem: "changed: no longer the month's recorded head" });
  }
}

function checkSignature(
  row: ArchivedNotification,
  keys: Map<string, KeyObject>,
  opts: VerifyOptions,
  report: VerifyReport,
): void {
  if (opts.since && row.receivedAt < opts.since) return;
  if (opts.environment !== undefined && row.environment !== opts.environment) return;
  const key = keys.get(row.keyFingerprint);
  const bytes = signedBytesOf(row);
  if (!key) report.bad.push({ id: row.id, problem: 'its key is not in the archive' });
  else if (!bytes) report.bad.push({ id: row.id, problem: 'its signature headers are incomplete' });
  else if (!verify('sha256', bytes.signed, key, bytes.signature))
    report.bad.push({ id: row.id, problem: 'its platform signature does not verify' });
  else report.signaturesVerified++;
}

/** The stored keys whose PEM still has their fingerprint; one that does not is left out, so its rows fail. */
async function loadKeys(pool: Pool): Promise<Map<string, KeyObject>> {
  const { rows } = await pool.query<{ fingerprint: string; pem: string }>(
    `SELECT fingerprint, pem FROM ${SCHEMA}.keys`,
  );
  const keys = new Map<string, KeyObject>();
  for (const r of rows) {
    const key = createPublicKey(r.pem);
    if (keyIdentity(key).fingerprint === r.fingerprint) keys.set(r.fingerprint, key);
  }
  return keys;
}
