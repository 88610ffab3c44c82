/**
 * `npm run bench`: starts its own Redis, sink and subjects, runs each phase against the service and
 * its lean baseline side by side, prints a Markdown table and writes the results as JSON to
 * bench/results/. See docs/benchmarks.md for the phases, flags and the latest figures.
 */
import { mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { BenchContext } from './harness/context';
import { benchOptions, flagsToEnv, type BenchOptions } from './harness/options';
import { runDrainPhase } from './phases/drain';
import { runFixedRatePhase } from './phases/fixed-rate';
import { ingestRound, runIngestPhase } from './phases/ingest';
import { runSoakPhase } from './phases/soak';
import { runAmqpPhase } from './phases/amqp';
import { runPostgresPhase } from './phases/postgres';
import { runTracingPhase } from './phases/tracing';
import { runArchivePhase } from './phases/archive';
import { runConsolePhase } from './phases/console';
import { runTransformPhase } from './phases/transform';
import { forwardingAvailable, killAllChildren, overrideServiceNodeFlags } from './harness/processes';
import { newestProfile, summarizeProfile } from './harness/profile-summary';
import { BenchRedis } from './harness/redis';
import { buildRows, renderProfile, renderTable, writeResults } from './harness/report';
import type { BenchResult, DrainPhase } from './harness/results';
import { Sink } from './harness/sink-control';
import { Workdir } from './harness/workdir';

function machine(redisVersion: string): BenchResult['meta']['machine'] {
  return {
    nproc: os.availableParallelism(),
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    memTotalGB: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    os: `${os.type()} ${os.release()}`,
    node: process.version,
    redis: redisVersion,
  };
}

/** One extra, uncounted service ingest run under `node --cpu-prof` (profiling slows it down). */
async function profileIngest(ctx: BenchContext): Promise<BenchResult['profile']> {
  const dir = path.join(ctx.options.resultsDir, 'profiles', new Date().toISOString().replace(/[:.]/g, '-'));
  mkdirSync(dir, { recursive: true });
  await ingestRound(ctx, 'service', 0, dir);
  const file = newestProfile(dir);
  if (!file) throw new Error(`no .cpuprofile written in ${dir}`);
  return { file, ...summarizeProfile(file) };
}

/** Per-event drain cost at the larger backlog relative to the smaller one (1 = flat). */
function costGrowth(small: DrainPhase | undefined, large: DrainPhase, kind: 'service' | 'baseline'): number | null {
  const a = small?.[kind];
  const b = large[kind];
  if (!a || 'skipped' in a || 'skipped' in b || b.eventsPerSec === 0) return null;
  return Math.round((a.eventsPerSec / b.eventsPerSec) * 100) / 100;
}

export async function runBench(
  options: BenchOptions,
  log: (line: string) => void = defaultLog,
): Promise<{ result: BenchResult; file: string; table: string }> {
  const started = Date.now();
  overrideServiceNodeFlags(options.serviceNodeFlags);
  const workdir = new Workdir();
  const redis = await BenchRedis.start();
  const sink = await Sink.start();
  const ctx: BenchContext = {
    options,
    redis,
    sink,
    workdir,
    forwarding: forwardingAvailable(),
    log: (m) => log(`[bench ${((Date.now() - started) / 1000).toFixed(1)}s] ${m}`),
  };
  ctx.log(
    `redis ${redis.url}, sink ${sink.url}, forwarding ${ctx.forwarding ? 'available' : 'not available'}, phases ${[...options.phases].join(', ')}`,
  );
  try {
    const result: BenchResult = {
      meta: {
        startedAt: new Date(started).toISOString(),
        finishedAt: '',
        durationSec: 0,
        command: options.command,
        smoke: options.smoke,
        forwardingAvailable: ctx.forwarding,
        machine: machine(await redis.version()),
        options: { ...options, phases: [...options.phases] },
      },
      rows: [],
    };
    if (options.phases.has('ingest')) result.ingest = await runIngestPhase(ctx);
    if (options.profile) result.profile = await profileIngest(ctx);
    if (options.phases.has('fixedRate')) result.fixedRate = await runFixedRatePhase(ctx);
    if (options.phases.has('drain'))
      result.drain = await runDrainPhase(ctx, options.drain.backlog, 'drain', {
        ordered: true,
        multiTarget: true,
        rounds: options.drain.rounds,
      });
    if (options.phases.has('growth')) {
      const growth = await runDrainPhase(ctx, options.drain.growthBacklog, 'growth');
      result.growth = {
        ...growth,
        serviceCostGrowth: costGrowth(result.drain, growth, 'service'),
        baselineCostGrowth: costGrowth(result.drain, growth, 'baseline'),
      };
    }
    if (options.phases.has('soak')) result.soak = await runSoakPhase(ctx);
    if (options.phases.has('amqp')) result.amqp = await runAmqpPhase(ctx);
    if (options.phases.has('postgres')) result.postgres = await runPostgresPhase(ctx);
    if (options.phases.has('tracing')) result.tracing = await runTracingPhase(ctx);
    if (options.phases.has('archive')) result.archive = await runArchivePhase(ctx);
    if (options.phases.has('console')) result.console = await runConsolePhase(ctx);
    if (options.phases.has('transform'))
      result.transform = await runTransformPhase(ctx, options.drain.backlog, options.drain.rounds);
    result.meta.finishedAt = new Date().toISOString();
    result.meta.durationSec = Math.round((Date.now() - started) / 1000);
    result.rows = buildRows(result);
    const file = writeResults(options.resultsDir, result);
    const table = renderTable(result.rows);
    return { result, file, table };
  } finally {
    await sink.stop();
    await redis.stop();
    workdir.remove();
  }
}

function defaultLog(line: string): void {
  process.stderr.write(`${line}\n`);
}

function commandLine(argv: readonly string[]): string {
  const env = Object.entries(process.env)
    .filter(([k]) => k.startsWith('BENCH_'))
    .map(([k, v]) => `${k}=${v ?? ''} `)
    .join('');
  return `${env}npm run bench${argv.length ? ` -- ${argv.join(' ')}` : ''}`;
}

if (require.main === module) {
  const argv = process.argv.slice(2);
  process.on('SIGINT', () => {
    killAllChildren();
    process.exit(130);
  });
  runBench(benchOptions({ ...process.env, ...flagsToEnv(argv) }, commandLine(argv)))
    .then(({ result, file, table }) => {
      process.stdout.write(`\n${table}\n\n`);
      const profile = renderProfile(result);
      if (profile) process.stdout.write(`${profile}\n\n`);
      process.stdout.write(`machine: ${JSON.stringify(result.meta.machine)}\nresults: ${file}\n`);
    })
    .catch((err: Error) => {
      process.stderr.write(`bench failed: ${err.stack ?? err.message}\n`);
      killAllChildren();
      process.exit(1);
    });
}
