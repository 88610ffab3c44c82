import { Client } from 'pg';
import { FORWARDING_MISSING, type BenchContext } from '../harness/context';
import {
  drainFigures,
  interleavedRounds,
  queueAndStartDrainer,
  watchDrainer,
  type DrainerKind,
  type MaybeDrainInto,
} from '../harness/drainer';
import type { PostgresPhase } from '../harness/results';
import { withClient, withFreshDatabase, withPostgresServer } from '../harness/pg-database';
import { inboxDefinition } from '../../src/forwarding/destinations/postgres-row';
import { MAX_POOL_SIZE } from '../../src/postgres/pool';

/**
 * Queues the backlog while nothing consumes it, starts the drainer (the service with ROLE=worker and
 * one postgres target, or raw node-postgres inserts) into a fresh database's inbox, and times it by
 * the rows themselves: first to last `received_at` (the database's clock at each insert).
 */
async function postgresRun(ctx: BenchContext, serverUrl: string, kind: DrainerKind): Promise<MaybeDrainInto> {
  const { backlog } = ctx.options.postgres;
  return withFreshDatabase(serverUrl, kind, async (url) => {
    await withClient(url, (db) => db.query(inboxDefinition('inbox')));
    await ctx.redis.flush();
    // The raw inserts get the service's pool for the same concurrency: as many connections inserting.
    const poolSize = String(Math.min(MAX_POOL_SIZE, ctx.options.drain.targetConcurrency));
    const subject = await queueAndStartDrainer(
      ctx,
      kind,
      'postgres',
      backlog,
      { type: 'postgres', url, table: 'inbox' },
      { script: 'subjects/raw-pg-worker', env: { PG_URL: url, PG_POOL_SIZE: poolSize } },
    );
    const rows = new Client({ connectionString: url });
    await rows.connect();
    try {
      const count = async () => Number((await rows.query('SELECT count(*) AS n FROM inbox')).rows[0].n);
      const used = await watchDrainer(subject, backlog, count);
      const span = (
        await rows.query<{ n: string; ms: string | null }>(
          'SELECT count(*) AS n, extract(epoch FROM max(received_at) - min(received_at)) * 1000 AS ms FROM inbox',
        )
      ).rows[0]!;
      const delivered = Number(span.n);
      if (delivered === 0) return { skipped: 'nothing reached PostgreSQL within 60 s' };
      const figures = drainFigures(backlog, delivered, Number(span.ms), used.cpuMs, used.rssMaxMB);
      ctx.log(
        `postgres ${kind}: ${figures.eventsPerSec} events/s into PostgreSQL (${figures.delivered} of ${backlog}), CPU ms per delivery ${figures.cpuMsPerDelivery}, RSS max ${figures.rssMaxMB} MB`,
      );
      return figures;
    } finally {
      await rows.end();
    }
  });
}

/**
 * The service's delivery worker and raw node-postgres inserts (bench/subjects/raw-pg-worker.ts) drain
 * the same backlog into an inbox table, each into a fresh database, `rounds` times each, alternating
 * who goes first; the best round of each counts. The PostgreSQL is BENCH_PG_URL's, or a throwaway one
 * started here (skipped when neither can be had).
 */
export async function runPostgresPhase(ctx: BenchContext): Promise<PostgresPhase> {
  const { backlog, url, rounds } = ctx.options.postgres;
  const skipped = (why: string): PostgresPhase => ({ backlog, service: { skipped: why }, baseline: { skipped: why } });
  if (!ctx.forwarding) return skipped(FORWARDING_MISSING);
  return withPostgresServer(
    url,
    async (serverUrl) => ({
      backlog,
      ...(await interleavedRounds(rounds, (kind) => postgresRun(ctx, serverUrl, kind))),
    }),
    skipped,
  );
}
