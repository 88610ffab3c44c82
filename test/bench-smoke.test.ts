import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { benchOptions } from '../bench/harness/options';
import { forwardingAvailable } from '../bench/harness/processes';
import type { BenchResult, DrainPhase } from '../bench/harness/results';
import { runBench } from '../bench/run';
import type { LatencySummary } from '../bench/harness/stats';

/**
 * A few seconds of every benchmark phase, so the harness (`npm run bench`) keeps working: its own
 * Redis, sink, service and baseline processes, the presigned load, the JSON results. The figures of
 * such a short run mean nothing; what is checked is that each phase measured something real.
 */
let resultsDir: string;
beforeAll(() => {
  resultsDir = mkdtempSync(path.join(tmpdir(), 'bench-smoke-'));
});
afterAll(() => rmSync(resultsDir, { recursive: true, force: true }));

function expectLatency(l: LatencySummary | undefined): void {
  expect(l).toBeDefined();
  expect(l!.count).toBeGreaterThan(0);
  expect(l!.p50).toBeGreaterThan(0);
  expect(l!.p99).toBeGreaterThanOrEqual(l!.p50);
}

function expectDrain(d: DrainPhase | undefined, backlog: number): void {
  expect(d).toBeDefined();
  const baseline = d!.baseline;
  if ('skipped' in baseline) throw new Error(`raw worker drain skipped: ${baseline.skipped}`);
  expect(baseline.delivered).toBe(backlog);
  expect(baseline.eventsPerSec).toBeGreaterThan(0);
  expect(baseline.redisBytesPerQueuedEvent).toBeGreaterThan(0);
  if (forwardingAvailable()) {
    if ('skipped' in d!.service)
      throw new Error(`service drain skipped although src/forwarding exists: ${d!.service.skipped}`);
    expect(d!.service.delivered).toBe(backlog);
    expect(d!.service.eventsPerSec).toBeGreaterThan(0);
  } else {
    expect(d!.service).toEqual({ skipped: expect.stringMatching(/forwarding not available/) });
  }
}

function ratioOfRow(result: BenchResult, section: RegExp, metric: string) {
  return result.rows.find((r) => section.test(r.section) && r.metric === metric)?.ratio;
}

it('when the harness runs in smoke mode, then every phase reports figures for the service and its baseline, with ratios', async () => {
  // The suite's PostgreSQL for the postgres phase (it makes and drops its own databases): no initdb of its own.
  const options = benchOptions(
    { BENCH_SMOKE: '1', BENCH_RESULTS_DIR: resultsDir, BENCH_PG_URL: process.env.TEST_PG_URL },
    'jest test/bench-smoke.test.ts',
  );
  const { file, table } = await runBench(options, () => undefined);
  const result = JSON.parse(readFileSync(file, 'utf8')) as BenchResult;

  expect(result.meta.smoke).toBe(true);
  expect(result.meta.machine.nproc).toBeGreaterThan(0);

  for (const figures of [result.ingest?.service, result.ingest?.baseline, result.ingest?.expressBaseline]) {
    expect(figures?.acceptedPerSec).toBeGreaterThan(0);
    expect(figures?.errors).toBe(0);
    expectLatency(figures?.ack);
    expect(figures?.rssMaxMB).toBeGreaterThan(0);
  }

  for (const figures of [result.fixedRate?.service, result.fixedRate?.baseline]) {
    expect(figures?.errors).toBe(0);
    expectLatency(figures?.ack);
  }
  expectLatency(result.fixedRate?.baseline.e2e);
  if (forwardingAvailable()) expectLatency(result.fixedRate?.service.e2e);
  else expect(result.fixedRate?.service.e2eSkipped).toMatch(/forwarding not available/);

  expectDrain(result.drain, options.drain.backlog);
  expectDrain(result.growth, options.drain.growthBacklog);
  if (forwardingAvailable()) {
    // Every event reaches each of the targets: the sink counts a delivery per event and target.
    const multi = result.drain?.multiTarget;
    if (!multi || 'skipped' in multi.drain) throw new Error('the drain to several targets did not run');
    expect(multi.drain.targets).toBe(multi.targets);
    expect(multi.drain.delivered).toBe(options.drain.backlog * multi.targets);
    expect(multi.drain.deliveriesPerSec).toBeGreaterThan(multi.drain.eventsPerSec);
  }

  if (forwardingAvailable()) {
    // The same backlog, to one target with a typical transform and without one: both delivered in full.
    for (const d of [result.transform?.plain, result.transform?.transformed]) {
      if (!d || 'skipped' in d) throw new Error('the transform phase did not run');
      expect(d.delivered).toBe(options.drain.backlog);
    }
    expect(ratioOfRow(result, /^transform/, 'events/s delivered, with a transform vs without')).toEqual(
      expect.any(Number),
    );
  }

  if (forwardingAvailable()) {
    // The drain into PostgreSQL: every event a row, by the service and by the raw inserts.
    for (const d of [result.postgres?.service, result.postgres?.baseline]) {
      if (!d || 'skipped' in d) throw new Error('the postgres phase did not run');
      expect(d.delivered).toBe(options.postgres.backlog);
    }
    expect(ratioOfRow(result, /^drain into PostgreSQL/, 'events/s inserted')).toEqual(expect.any(Number));
  }

  // The evidence archive: ingest with it on and off, and the whole backlog archived, one row each.
  const archive = result.archive;
  if (!archive || 'skipped' in archive) throw new Error('the archive phase did not run');
  expect(archive.ingest.on.errors).toBe(0);
  expect(archive.ingest.off.errors).toBe(0);
  if ('skipped' in archive.drain) throw new Error(`the archive drain did not finish: ${archive.drain.skipped}`);
  expect(archive.drain.rows).toBe(options.archive.backlog);
  expect(archive.drain.rowsPerSec).toBeGreaterThan(0);
  expect(ratioOfRow(result, /^evidence archive/, 'ingest accepted/s, no errors')).toEqual(expect.any(Number));

  for (const soak of [result.soak?.service, result.soak?.baseline]) {
    expect(soak?.errors).toBe(0);
    expect(soak?.rssMaxMB).toBeGreaterThan(0);
    expectLatency(soak?.ack);
  }

  // The console phase timed every kind of search over the events it filled, each page checked.
  const consolePhase = result.console;
  expect(consolePhase?.events).toBe(options.console.events);
  for (const l of [consolePhase?.byRequestId, consolePhase?.firstPage, consolePhase?.filtered, consolePhase?.noMatch]) {
    expect(l?.count).toBe(options.console.samples);
    expectLatency(l);
  }
  expect(table).toContain('| console search');

  // Every figure of the service is set against its baseline.
  const ratioOf = (section: RegExp, metric: string) =>
    result.rows.find((r) => section.test(r.section) && r.metric === metric)?.ratio;
  expect(ratioOf(/^ingest \(/, 'accepted/s, no errors')).toEqual(expect.any(Number));
  expect(ratioOf(/^ingest vs the Express baseline/, 'accepted/s, no errors')).toEqual(expect.any(Number));
  expect(ratioOf(/^fixed/, 'ack p99 ms')).toEqual(expect.any(Number));
  expect(ratioOf(/^memory/, 'RSS max MB, every phase')).toEqual(expect.any(Number));
  // The service's RSS peak of every phase that ran is a row of its own, against the 200 MB target.
  const peaks = result.rows.filter(
    (r) => r.section === 'memory' && r.metric.startsWith('RSS max MB, ') && r.metric !== 'RSS max MB, every phase',
  );
  expect(peaks.map((r) => r.metric)).toEqual(
    expect.arrayContaining(['RSS max MB, ingest (ROLE=receiver)', 'RSS max MB, soak (ROLE=all)']),
  );
  for (const r of peaks) expect(r).toMatchObject({ service: expect.any(Number), target: '<= 200 MB' });
  if (forwardingAvailable()) expect(ratioOf(/^drain/, 'events/s delivered')).toEqual(expect.any(Number));
  for (const row of result.rows) expect(row).toHaveProperty('ratio');
  expect(table).toContain('| ingest');
}, 180_000);
