import { writeFileSync } from 'node:fs';
import { stringify } from 'yaml';
import { serviceLogFile, type BenchContext } from './context';
import { cpuMsOf } from './cpu';
import { RssSampler, toMB } from './rss';
import { enqueueBacklog } from './backlog';
import { startRawDrainerProcess, startService, type Subject } from '../subjects/subjects';

export type DrainerKind = 'service' | 'baseline';

/** One drain of a backlog into the merchant's side (a broker, a database), timed where it arrived. */
export interface DrainInto {
  backlog: number;
  /** Distinct event ids that arrived. */
  delivered: number;
  eventsPerSec: number;
  cpuMsPerDelivery: number;
  rssMaxMB: number;
}

export type MaybeDrainInto = DrainInto | { skipped: string };

/** The service as the drainer: `ROLE=worker` with `configFile`'s targets, over the queues under `prefix`. */
export function startWorkerService(ctx: BenchContext, prefix: string, configFile: string, label: string) {
  return startService({
    redisUrl: ctx.redis.url,
    publicKeyFile: ctx.workdir.publicKeyFile,
    prefix,
    role: 'worker',
    configFile,
    logFile: serviceLogFile(ctx, label),
    extraEnv: ctx.options.serviceEnv,
  });
}

/**
 * Queues the backlog for one `destination` target while nothing consumes it, then starts the drainer:
 * the service (`ROLE=worker` with that target, `concurrency` the drain's), or the raw drainer `script`
 * with its `env` (the same total concurrency, spread over the event queues).
 */
export async function queueAndStartDrainer(
  ctx: BenchContext,
  kind: DrainerKind,
  label: string,
  backlog: number,
  destination: Record<string, unknown>,
  raw: { script: Parameters<typeof startRawDrainerProcess>[0]; env: Record<string, string> },
): Promise<Subject> {
  const prefix = `${label}${kind}`;
  const target = { name: 'merchant', events: ['*'], concurrency: ctx.options.drain.targetConcurrency, destination };
  const { seconds } = await enqueueBacklog(kind, ctx.redis.url, prefix, backlog, { targets: [target], orderKeys: 0 });
  ctx.log(`${label} ${kind}: ${backlog} events queued in ${seconds.toFixed(1)} s`);
  if (kind === 'baseline') {
    const concurrency = ctx.options.drain.rawWorkerConcurrency;
    return startRawDrainerProcess(raw.script, { redisUrl: ctx.redis.url, prefix, concurrency, env: raw.env });
  }
  const configFile = ctx.workdir.file(`service-${label}.yaml`);
  writeFileSync(configFile, stringify({ targets: [target] }));
  return startWorkerService(ctx, prefix, configFile, `${label}-${kind}`);
}

/**
 * Runs a drainer until `arrived()` reaches the backlog (or nothing new arrives for 60 s), then stops
 * it; answers the CPU it spent and its largest RSS meanwhile.
 */
export async function watchDrainer(
  subject: Subject,
  backlog: number,
  arrived: () => Promise<number> | number,
): Promise<{ cpuMs: number; rssMaxMB: number }> {
  const rss = new RssSampler(subject.pid, 500);
  const cpuAtStart = cpuMsOf(subject.pid);
  let cpuMs = 0;
  try {
    const deadline = Date.now() + 60_000 + (backlog / 100) * 1000;
    let progressAt = Date.now();
    let last = 0;
    for (let n = 0; n < backlog && Date.now() < deadline && Date.now() - progressAt < 60_000; n = await arrived()) {
      await new Promise((r) => setTimeout(r, 50));
      if (n !== last) [last, progressAt] = [n, Date.now()];
    }
  } finally {
    rss.stop();
    cpuMs = cpuMsOf(subject.pid) - cpuAtStart;
    await subject.stop();
  }
  return { cpuMs, rssMaxMB: toMB(rss.max()) };
}

/** The figures of one drain: `spanMs` from the first arrival to the last. */
export function drainFigures(backlog: number, delivered: number, spanMs: number, cpuMs: number, rssMaxMB: number) {
  return {
    backlog,
    delivered,
    eventsPerSec: Math.round(((delivered - 1) / Math.max(1, spanMs)) * 1000),
    cpuMsPerDelivery: Math.round((cpuMs / Math.max(1, delivered)) * 1000) / 1000,
    rssMaxMB,
  };
}

const rateOf = (d: MaybeDrainInto): number => ('skipped' in d ? Number.NaN : d.eventsPerSec);

/**
 * `rounds` drains by each drainer, alternating who goes first (the baseline in odd rounds); the best
 * round of each counts, with every round's rate when there were several.
 */
export async function interleavedRounds(
  rounds: number,
  run: (kind: DrainerKind) => Promise<MaybeDrainInto>,
): Promise<{
  service: MaybeDrainInto;
  baseline: MaybeDrainInto;
  rounds?: { service: number[]; baseline: number[] };
}> {
  const runs: Record<DrainerKind, MaybeDrainInto[]> = { baseline: [], service: [] };
  for (let round = 1; round <= Math.max(1, rounds); round++) {
    for (const kind of (round % 2 === 1 ? ['baseline', 'service'] : ['service', 'baseline']) as DrainerKind[])
      runs[kind].push(await run(kind));
  }
  const best = (r: MaybeDrainInto[]) => r.reduce((a, b) => (rateOf(b) > rateOf(a) || Number.isNaN(rateOf(a)) ? b : a));
  return {
    service: best(runs.service),
    baseline: best(runs.baseline),
    ...(rounds > 1 ? { rounds: { service: runs.service.map(rateOf), baseline: runs.baseline.map(rateOf) } } : {}),
  };
}
