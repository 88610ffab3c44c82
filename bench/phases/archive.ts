import { writeFileSync } from 'node:fs';
import { stringify } from 'yaml';
import { Client } from 'pg';
import type { BenchContext } from '../harness/context';
import { serviceLogFile } from '../harness/context';
import { watchDrainer } from '../harness/drainer';
import { runLoad } from '../harness/load';
import { withFreshDatabase, withPostgresServer } from '../harness/pg-database';
import { presign } from '../harness/presign';
import type { ArchiveDrain, ArchivePhase, MaybeArchiveDrain } from '../harness/results';
import { startService } from '../subjects/subjects';
import { keyPrefix, ownKeys } from '../../src/model/names';
import { ingestOffOn } from './ingest';

const ROWS = 'webhook_archive.notifications';

/** The context whose services run with the archive on, in `url`'s database. */
function withArchive(ctx: BenchContext, url: string): BenchContext {
  return { ...ctx, options: { ...ctx.options, serviceEnv: { ...ctx.options.serviceEnv, ARCHIVE_URL: url } } };
}

/** Deletes every key under `prefix` but those in `keep`. */
async function emptyAllBut(ctx: BenchContext, prefix: string, keep: readonly string[]): Promise<void> {
  const redis = ctx.redis.admin;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    const others = keys.filter((k) => !keep.includes(k));
    if (others.length > 0) await redis.del(...others);
    cursor = next;
  } while (cursor !== '0');
}

/**
 * One backlog drain into a fresh database: a receiver with the archive on (and no archiver: ROLE=receiver)
 * acknowledges `backlog` notifications, which wait in the archive stream; then a ROLE=worker process
 * with the archive on starts and its archiver writes them. No targets on either side, and the event
 * queues are emptied before the worker starts, so its only work is the archive's. Timed by PostgreSQL's clock: from the first batch's transaction start
 * (`archived_at`) to the poll that first counts every row.
 */
async function backlogDrain(ctx: BenchContext, serverUrl: string, round: number): Promise<MaybeArchiveDrain> {
  const { backlog } = ctx.options.archive;
  return withFreshDatabase(serverUrl, 'archive', async (url) => {
    await ctx.redis.flush();
    const prefix = `archive${round}`;
    const configFile = ctx.workdir.file('service-archive.yaml');
    writeFileSync(configFile, stringify({ targets: [] }));
    const common = {
      redisUrl: ctx.redis.url,
      publicKeyFile: ctx.workdir.publicKeyFile,
      prefix,
      configFile,
      extraEnv: { ...ctx.options.serviceEnv, ARCHIVE_URL: url },
    };
    const receiver = await startService({ ...common, role: 'receiver', logFile: serviceLogFile(ctx, 'archive-in') });
    let acknowledged: number;
    try {
      const { connections } = ctx.options.ingest;
      const requests = await presign(ctx.workdir.privateKey, backlog);
      const load = await runLoad(
        ctx.workdir,
        { mode: 'saturate', url: receiver.url as string, amount: backlog, connections, timeoutSec: 10 },
        requests,
      );
      acknowledged = load.ok;
    } finally {
      await receiver.stop();
    }
    const stream = ownKeys.archive(keyPrefix(prefix));
    // The archive stream and its key registry stay: what the archiver needs.
    await emptyAllBut(ctx, keyPrefix(prefix), [stream, ownKeys.archiveKeys(keyPrefix(prefix))]);
    const waiting = await ctx.redis.admin.xlen(stream);
    ctx.log(`archive: ${acknowledged} acknowledged, ${waiting} waiting in the archive stream`);
    if (waiting !== acknowledged) return { skipped: `${acknowledged} acknowledged but ${waiting} in the stream` };
    const db = new Client({ connectionString: url });
    await db.connect();
    try {
      const worker = await startService({ ...common, role: 'worker', logFile: serviceLogFile(ctx, 'archive-out') });
      let doneAt: Date | undefined;
      const count = async () => {
        const r = await db
          .query<{ n: string; at: Date }>(`SELECT count(*) AS n, clock_timestamp() AS at FROM ${ROWS}`)
          .catch(() => ({ rows: [{ n: '0', at: new Date() }] }));
        const n = Number(r.rows[0]!.n);
        if (n >= waiting && doneAt === undefined) doneAt = r.rows[0]!.at;
        return n;
      };
      const used = await watchDrainer(worker, waiting, count);
      const span = (
        await db.query<{ n: string; first: Date | null }>(
          `SELECT count(*) AS n, min(archived_at) AS first FROM ${ROWS}`,
        )
      ).rows[0]!;
      const rows = Number(span.n);
      if (doneAt === undefined || span.first === null)
        return { skipped: `${rows} of ${waiting} rows written before the drain stalled` };
      const seconds = (doneAt.getTime() - span.first.getTime()) / 1000;
      const figures: ArchiveDrain = {
        rows,
        seconds: Math.round(seconds * 100) / 100,
        rowsPerSec: Math.round(rows / Math.max(0.001, seconds)),
        cpuMsPerRow: Math.round((used.cpuMs / Math.max(1, rows)) * 1000) / 1000,
        rssMaxMB: used.rssMaxMB,
      };
      ctx.log(
        `archive: ${figures.rows} rows in ${figures.seconds} s, ${figures.rowsPerSec} rows/s, CPU ms per row ${figures.cpuMsPerRow}, RSS max ${figures.rssMaxMB} MB`,
      );
      return figures;
    } finally {
      await db.end();
    }
  });
}

/**
 * The evidence archive's cost and speed: ingest with the archive on against off in the same run, and
 * a backlog of notifications drained by the archiver into PostgreSQL (BENCH_PG_URL's server, or a
 * throwaway one started here; a fresh database each time), `rounds` times, the best counting.
 */
export async function runArchivePhase(ctx: BenchContext): Promise<ArchivePhase> {
  const { backlog, rounds } = ctx.options.archive;
  const skipped = (why: string): ArchivePhase => ({ backlog, skipped: why });
  return withPostgresServer(
    ctx.options.postgres.url,
    async (serverUrl) => {
      // The receiver only appends to the archive stream (the archiver runs where the workers do).
      const ingest = await withFreshDatabase(serverUrl, 'ingest', (url) =>
        ingestOffOn({ off: ctx, on: withArchive(ctx, url) }, 'archive'),
      );
      const drains: MaybeArchiveDrain[] = [];
      for (let round = 1; round <= Math.max(1, rounds); round++) drains.push(await backlogDrain(ctx, serverUrl, round));
      const rate = (d: MaybeArchiveDrain) => ('skipped' in d ? -1 : d.rowsPerSec);
      return {
        backlog,
        ingest,
        drain: drains.reduce((a, b) => (rate(b) > rate(a) ? b : a)),
        drainRounds: drains.map(rate),
      };
    },
    skipped,
  );
}
