import { pg } from '../../postgres/driver';
import { INBOX_COLUMNS, inboxDefinition } from './postgres-row';
import type { PostgresDestination } from '../../model/destination-schema';
import type { Target } from '../../model/target-schema';
import { pgFailure } from '../../postgres/failure';

/** What a look at a postgres destination's table found. */
export type TableVerdict =
  | { reachable: false; reason: string }
  | {
      reachable: true;
      /** Every delivery would fail: the service does not start (or reload) with it, `config check` fails. */
      problems: string[];
      /** Worth saying, but the deliveries may still succeed (a privilege granted later). */
      warnings: string[];
      /** The table was missing, and this look created it. */
      created: boolean;
      missing: boolean;
    };

const COLUMNS_QUERY = `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type,
  a.attnotnull AND NOT a.atthasdef AS required
  FROM pg_attribute a WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`;

// A unique index whose one key column is webhook_id (a primary key is one): what ON CONFLICT (webhook_id) needs.
const KEY_QUERY = `SELECT EXISTS (SELECT 1 FROM pg_index i JOIN pg_attribute a
  ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
  WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indnkeyatts = 1 AND i.indpred IS NULL
  AND a.attname = 'webhook_id') AS keyed, has_table_privilege(to_regclass($1), 'INSERT') AS insertable`;

/** What makes every insert fail: a missing column, a body that is not JSON, no key, a column we never fill. */
function tableProblems(
  table: string,
  columns: { name: string; type: string; required: boolean }[],
  keyed: boolean,
): string[] {
  const problems: string[] = [];
  const byName = new Map(columns.map((c) => [c.name, c]));
  const missing = INBOX_COLUMNS.map(([name]) => name).filter((name) => !byName.has(name));
  if (missing.length) problems.push(`table "${table}" has no column ${missing.join(', ')}`);
  const body = byName.get('body')?.type;
  if (body !== undefined && body !== 'jsonb' && body !== 'json')
    problems.push(`column "${table}".body is ${body}: it must be jsonb`);
  if (byName.has('webhook_id') && !keyed)
    problems.push(
      `column "${table}".webhook_id is not the primary key (nor alone in a unique index): ON CONFLICT needs it`,
    );
  const known = new Set<string>(INBOX_COLUMNS.map(([name]) => name));
  const unfilled = columns.filter((c) => c.required && !known.has(c.name)).map((c) => c.name);
  if (unfilled.length)
    problems.push(
      `table "${table}" has NOT NULL column(s) ${unfilled.join(', ')} without a default, which no insert fills`,
    );
  return problems;
}

/**
 * Connects to a postgres destination once and checks its table: present (or, with `create`, created),
 * with every documented column, `webhook_id` its key, and INSERT granted to the connecting user.
 */
export async function inspectTable(d: PostgresDestination, timeoutMs: number, create: boolean): Promise<TableVerdict> {
  const client = new (pg().Client)({
    connectionString: d.url,
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
  });
  client.on('error', () => undefined); // a connection lost after the checks: nothing waits on it
  try {
    await client.connect();
  } catch (err) {
    return { reachable: false, reason: pgFailure(err).message };
  }
  try {
    const exists = (await client.query<{ oid: string | null }>('SELECT to_regclass($1)::text AS oid', [d.table]))
      .rows[0]?.oid;
    let created = false;
    if (!exists) {
      if (!create)
        return {
          reachable: true,
          missing: true,
          created: false,
          warnings: [],
          problems: [`table "${d.table}" does not exist: create it (docs/forwarding.md) or set createTable: true`],
        };
      await client.query(inboxDefinition(d.table));
      created = true;
    }
    const columns = (await client.query<{ name: string; type: string; required: boolean }>(COLUMNS_QUERY, [d.table]))
      .rows;
    const { keyed, insertable } = (await client.query<{ keyed: boolean; insertable: boolean }>(KEY_QUERY, [d.table]))
      .rows[0]!;
    const warnings = insertable
      ? []
      : [`the connecting user may not INSERT into "${d.table}": every delivery would be dead-lettered (GRANT INSERT)`];
    return { reachable: true, missing: false, created, warnings, problems: tableProblems(d.table, columns, keyed) };
  } catch (err) {
    const f = pgFailure(err);
    if (f.transient) return { reachable: false, reason: f.message };
    const problem = `checking table "${d.table}" failed: ${f.message}`;
    return { reachable: true, missing: false, created: false, warnings: [], problems: [problem] };
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The postgres targets' tables, checked (and created where `createTable` says) before workers start. */
export async function checkPostgresTables(
  targets: readonly Target[],
  timeoutMs = 5000,
): Promise<{ problems: string[]; warnings: string[]; created: string[] }> {
  const problems: string[] = [];
  const warnings: string[] = [];
  const created: string[] = [];
  await Promise.all(
    targets.map(async (t) => {
      const d = t.destination;
      if (d?.type !== 'postgres') return;
      const verdict = await inspectTable(d, timeoutMs, d.createTable);
      if (!verdict.reachable) {
        warnings.push(`target ${t.name}: PostgreSQL not reachable (${verdict.reason}); its table was not checked`);
        return;
      }
      problems.push(...verdict.problems.map((p) => `target "${t.name}": ${p}`));
      warnings.push(...verdict.warnings.map((w) => `target ${t.name}: ${w}`));
      if (verdict.created) created.push(`target ${t.name}: created table "${d.table}" (createTable: true)`);
    }),
  );
  return { problems, warnings, created };
}
