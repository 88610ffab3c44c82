import path from 'node:path';
import { projectRoot } from '../../src/config/project-root';
import { EVENT_TYPES } from '../../src/model/event-table';

export const PHASES = [
  'ingest',
  'fixedRate',
  'drain',
  'growth',
  'soak',
  'amqp',
  'postgres',
  'tracing',
  'archive',
  'console',
  'transform',
] as const;
export type PhaseName = (typeof PHASES)[number];

/** Everything a run can vary; `npm run bench -- --smoke` or BENCH_* environment variables pick the values. */
export interface BenchOptions {
  smoke: boolean;
  phases: ReadonlySet<PhaseName>;
  resultsDir: string;
  /** The command line as typed, recorded in the results so a run can be repeated. */
  command: string;
  ingest: {
    /** Interleaved baseline/service rounds; the best of each counts, which filters out a noisy neighbour. */
    rounds: number;
    /** Requests of the warm-up run (0: none), which also estimates the rate so the main run lasts `seconds`. */
    warmupRequests: number;
    seconds: number;
    connections: number;
    maxRequests: number;
  };
  fixedRate: { rate: number; seconds: number; warmupSeconds: number; connections: number };
  /**
   * rawWorkerConcurrency: jobs in flight per event queue of the raw worker (one worker per queue);
   * targetConcurrency: the service target's `concurrency`, by default the raw worker's total in flight.
   */
  /**
   * rounds: interleaved raw-worker/service drains of the backlog (the 10x growth backlog runs once);
   * the best of each counts, as in the ingest phase.
   */
  drain: {
    backlog: number;
    growthBacklog: number;
    rawWorkerConcurrency: number;
    targetConcurrency: number;
    rounds: number;
  };
  /**
   * The drain to RabbitMQ (the machine's, by default): the service's delivery worker against raw
   * amqplib publishers with confirms, the same backlog, interleaved `rounds` times; the best counts.
   */
  amqp: { url: string; backlog: number; rounds: number };
  /**
   * The drain into a PostgreSQL table (BENCH_PG_URL's server, or a throwaway one): the service's delivery
   * worker against raw node-postgres inserts, the same backlog and concurrency, interleaved `rounds` times.
   */
  postgres: { url: string | undefined; backlog: number; rounds: number };
  /**
   * The evidence archive on the same PostgreSQL as `postgres` (a fresh database each time): ingest
   * with the archive on against off (the ingest phase's rounds), and `backlog` acknowledged
   * notifications drained by the archiver, `rounds` times; the best counts.
   */
  archive: { backlog: number; rounds: number };
  soak: { rate: number; seconds: number; baselineSeconds: number; sampleEveryMs: number };
  /** The console's search: events in the retention window, and timed requests of each kind. */
  console: { events: number; samples: number };
  /** Profile the service under ingest load (`node --cpu-prof`) in an extra run that does not count. */
  profile: boolean;
  /** Keep the service's JSON log lines in the results folder instead of discarding them. */
  keepServiceLogs: boolean;
  /**
   * Extra environment for the service (`BENCH_SERVICE_ENV=LOG_LEVEL=warn,X=y`), for experiments only:
   * the figures that count are taken with every feature on, i.e. with this empty.
   */
  serviceEnv: Record<string, string>;
  /** Experiment: the baseline's Redis connection with ioredis auto-pipelining. */
  baselineAutoPipelining: boolean;
  /**
   * Experiment (`BENCH_SERVICE_NODE_FLAGS='--max-old-space-size=160 ...'`): the service's V8 flags
   * instead of those of `npm start`; the figures that count use `npm start`'s.
   */
  serviceNodeFlags?: string[];
}

type Env = Record<string, string | undefined>;

/** `--name=value` flags become BENCH_NAME=value, so flags and environment variables are one namespace. */
export function flagsToEnv(argv: readonly string[]): Env {
  const env: Env = {};
  for (const arg of argv) {
    const m = /^--([a-z0-9-]+)(?:=(.*))?$/.exec(arg);
    if (!m || !m[1])
      throw new Error(`unknown argument ${arg}: use --smoke, --profile or --name=value (see docs/benchmarks.md)`);
    env[`BENCH_${m[1].replace(/-/g, '_').toUpperCase()}`] = m[2] ?? '1';
  }
  return env;
}

function num(env: Env, name: string, fallback: number): number {
  const raw = env[`BENCH_${name}`];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`BENCH_${name} must be a non-negative number, got ${raw}`);
  return value;
}

function flag(env: Env, name: string): boolean {
  const raw = env[`BENCH_${name}`];
  return raw !== undefined && raw !== '' && raw !== '0' && raw !== 'false';
}

function keyValues(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`BENCH_SERVICE_ENV: expected NAME=value, got ${pair}`);
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}

function phases(env: Env): Set<PhaseName> {
  const raw = env.BENCH_PHASES;
  if (!raw) return new Set(PHASES);
  const picked = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const p of picked) {
    if (!(PHASES as readonly string[]).includes(p))
      throw new Error(`BENCH_PHASES: unknown phase ${p} (known: ${PHASES.join(', ')})`);
  }
  return new Set(picked as PhaseName[]);
}

/** Smoke mode shrinks every size so the whole harness runs in a few seconds and only proves it works. */
export function benchOptions(env: Env, command: string): BenchOptions {
  const smoke = flag(env, 'SMOKE');
  const backlog = num(env, 'BACKLOG', smoke ? 300 : 50_000);
  const rawConcurrency = num(env, 'RAW_CONCURRENCY', 10);
  return {
    smoke,
    phases: phases(env),
    resultsDir: env.BENCH_RESULTS_DIR ?? path.join(projectRoot(__dirname), 'bench', 'results'),
    command,
    ingest: {
      rounds: num(env, 'INGEST_ROUNDS', smoke ? 1 : 3),
      warmupRequests: num(env, 'INGEST_WARMUP', smoke ? 0 : 3000),
      seconds: num(env, 'INGEST_SECONDS', smoke ? 0.5 : 10),
      connections: num(env, 'CONNECTIONS', smoke ? 8 : 32),
      maxRequests: num(env, 'INGEST_MAX_REQUESTS', smoke ? 2000 : 200_000),
    },
    fixedRate: {
      rate: num(env, 'FIXED_RATE', smoke ? 200 : 1000),
      seconds: num(env, 'FIXED_SECONDS', smoke ? 1 : 30),
      warmupSeconds: num(env, 'FIXED_WARMUP_SECONDS', smoke ? 0 : 5),
      connections: num(env, 'FIXED_CONNECTIONS', 64),
    },
    drain: {
      backlog,
      // Smoke: 3x, enough to exercise the phase; the smoke run sits in the test suite's budget.
      growthBacklog: num(env, 'GROWTH_BACKLOG', smoke ? backlog * 3 : backlog * 10),
      rawWorkerConcurrency: rawConcurrency,
      // The same deliveries in flight as the raw worker, which runs one worker per event queue.
      targetConcurrency: num(env, 'TARGET_CONCURRENCY', rawConcurrency * EVENT_TYPES.length),
      rounds: num(env, 'DRAIN_ROUNDS', smoke ? 1 : 3),
    },
    amqp: {
      url: env.BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
      backlog: num(env, 'AMQP_BACKLOG', smoke ? 300 : 20_000),
      rounds: num(env, 'AMQP_ROUNDS', smoke ? 1 : 2),
    },
    postgres: {
      url: env.BENCH_PG_URL || undefined,
      backlog: num(env, 'PG_BACKLOG', smoke ? 300 : 20_000),
      rounds: num(env, 'PG_ROUNDS', smoke ? 1 : 2),
    },
    archive: {
      backlog: num(env, 'ARCHIVE_BACKLOG', smoke ? 300 : 50_000),
      rounds: num(env, 'ARCHIVE_ROUNDS', smoke ? 1 : 2),
    },
    soak: {
      rate: num(env, 'SOAK_RATE', smoke ? 200 : 250),
      seconds: num(env, 'SOAK_SECONDS', smoke ? 1.5 : 300),
      baselineSeconds: num(env, 'SOAK_BASELINE_SECONDS', smoke ? 1 : 60),
      sampleEveryMs: num(env, 'SOAK_SAMPLE_MS', smoke ? 100 : 500),
    },
    console: {
      events: num(env, 'CONSOLE_EVENTS', smoke ? 2000 : 100_000),
      samples: num(env, 'CONSOLE_SAMPLES', smoke ? 10 : 200),
    },
    profile: flag(env, 'PROFILE'),
    keepServiceLogs: flag(env, 'SERVICE_LOGS'),
    serviceEnv: keyValues(env.BENCH_SERVICE_ENV ?? ''),
    baselineAutoPipelining: flag(env, 'BASELINE_AUTOPIPELINE'),
    serviceNodeFlags:
      env.BENCH_SERVICE_NODE_FLAGS === undefined
        ? undefined
        : env.BENCH_SERVICE_NODE_FLAGS.split(/\s+/).filter(Boolean),
  };
}
