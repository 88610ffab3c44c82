import { UsageError } from '../errors';
import { parseArgs } from 'node:util';
import type { Pool } from 'pg';
import { ARCHIVE_POOL } from '../../archive/pool-settings';
import { maskUrl } from '../../logging/mask-url';
import { createPgPool } from '../../postgres/pool';
import { verifyArchive } from '../../archive/verify';
import { exportEvidence } from '../../archive/export';
import { formatTable } from '../table';
import { createArchiveHistory, type ArchiveHistory } from '../../archive/history';
import type { OperatorContext } from '../operator-context';

/** Runs `use` on a pool to the configured archive (ARCHIVE_URL), closed afterwards. */
export async function withArchive<T>(ctx: OperatorContext, use: (pool: Pool) => Promise<T>): Promise<T> {
  const url = ctx.config.archive.url;
  if (url === undefined)
    throw new UsageError('no archive configured: set ARCHIVE_URL (a postgresql:// connection string)');
  ctx.out(`archive: ${maskUrl(url)}`);
  const pg = createPgPool(url, { ...ARCHIVE_POOL, size: 1 });
  try {
    return await use(pg.pool);
  } finally {
    await pg.close(ARCHIVE_POOL.timeoutMs);
  }
}

/** Runs `use` with the archive's history when ARCHIVE_URL is set (the pool closed afterwards), else without. */
export async function withArchiveIfSet<T>(
  ctx: OperatorContext,
  use: (archive: ArchiveHistory | undefined) => Promise<T>,
): Promise<T> {
  if (ctx.config.archive.url === undefined) return use(undefined);
  return withArchive(ctx, (pool) => use(createArchiveHistory(pool)));
}

/**
 * `archive verify [--since DATE] [--environment NAME]`: every row's platform signature and every
 * month's hash chain; exit 1 when any row fails. `archive export <event id | request_id> --out DIR`:
 * the files a third party checks with openssl.
 */
export async function archiveCommand(ctx: OperatorContext, args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'verify') {
    const { values } = parseArgs({
      args: rest,
      options: { since: { type: 'string' }, environment: { type: 'string' } },
    });
    const since = values.since === undefined ? undefined : new Date(values.since);
    if (since && Number.isNaN(since.getTime()))
      throw new UsageError(`--since ${values.since}: not a date (e.g. 2026-01-31)`);
    const report = await withArchive(ctx, (pool) => verifyArchive(pool, { since, environment: values.environment }));
    ctx.out(
      `months: ${report.months} (removed by retention: ${report.monthsCut})  rows: ${report.rows}  ` +
        `signatures verified: ${report.signaturesVerified}  bad rows: ${report.bad.length}`,
    );
    if (report.bad.length > 0)
      ctx.out(
        formatTable(
          ['ROW', 'PROBLEM'],
          report.bad.map((b) => [b.id, b.problem]),
        ),
      );
    return report.bad.length > 0 ? 1 : 0;
  }
  if (sub === 'export') {
    const { values, positionals } = parseArgs({
      args: rest,
      allowPositionals: true,
      options: { out: { type: 'string' } },
    });
    const id = positionals[0];
    if (id === undefined || values.out === undefined)
      throw new UsageError('usage: archive export <event id | request_id> --out DIR');
    const dir = values.out;
    const { row, paths } = await withArchive(ctx, (pool) => exportEvidence(pool, id, dir));
    ctx.out(`${row.id}  ${row.eventId}  ${row.eventType}  ${row.scheme}  received ${row.receivedAt.toISOString()}`);
    for (const p of paths) ctx.out(`  ${p}`);
    ctx.out(`check: cd ${dir} && openssl dgst -sha256 -verify public-key.pem -signature signature.bin signed.txt`);
    return 0;
  }
  throw new UsageError('usage: archive verify [--since DATE] [--environment NAME] | archive export <id> --out DIR');
}
