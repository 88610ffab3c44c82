import type { BenchContext } from '../harness/context';
import { keyPrefix } from '../../src/model/names';
import { CpuMeter, cpuFigures } from '../harness/cpu';
import { serviceLogFile } from '../harness/context';
import { runLoad } from '../harness/load';
import { presign } from '../harness/presign';
import { sleep } from '../harness/processes';
import { jobTotals } from '../harness/queues';
import type { IngestFigures, IngestPhase, OffOnIngest } from '../harness/results';
import { RssSampler, rssOf, toMB } from '../harness/rss';
import { startBaselineServer, startService, type Subject } from '../subjects/subjects';

/** The service, the node:http baseline, and the same baseline handler inside one Express middleware. */
type Kind = 'service' | 'baseline' | 'express';

async function startSubject(ctx: BenchContext, kind: Kind, prefix: string, cpuProfDir?: string): Promise<Subject> {
  const common = { redisUrl: ctx.redis.url, publicKeyFile: ctx.workdir.publicKeyFile, prefix };
  if (kind !== 'service') {
    return startBaselineServer({
      ...common,
      rawConcurrency: ctx.options.drain.rawWorkerConcurrency,
      autoPipelining: ctx.options.baselineAutoPipelining,
      http: kind === 'express' ? 'express' : 'node',
    });
  }
  // ROLE=receiver: the ingest figure is the receiver's alone, like the baseline server's. With the
  // other phases' target (the sink, every event type), so it measures the path production runs:
  // routing, filters, one delivery job per notification. Nothing delivers in this role.
  const configFile = ctx.workdir.writeServiceConfig(ctx.sink.url, ctx.options.drain.targetConcurrency);
  return startService({
    ...common,
    role: 'receiver',
    configFile,
    logFile: serviceLogFile(ctx, `ingest-${prefix}`),
    cpuProfDir,
    extraEnv: ctx.options.serviceEnv,
  });
}

/**
 * One closed-loop run against a fresh subject: a warm-up (JIT, connections, and a rate estimate so
 * the measured run lasts about `seconds`), then the measured run. Every 2xx must have left a job
 * in Redis; anything else counts as an error.
 */
export async function ingestRound(
  ctx: BenchContext,
  kind: Kind,
  round: number,
  cpuProfDir?: string,
): Promise<IngestFigures> {
  const o = ctx.options.ingest;
  await ctx.redis.flush();
  const prefix = `ingest${kind}${round}`;
  const subject = await startSubject(ctx, kind, prefix, cpuProfDir);
  try {
    const url = subject.url as string;
    const warm =
      o.warmupRequests > 0
        ? await runLoad(
            ctx.workdir,
            { mode: 'saturate', url, amount: o.warmupRequests, connections: o.connections, timeoutSec: 10 },
            await presign(ctx.workdir.privateKey, o.warmupRequests + o.connections),
          )
        : { ok: 0, okPerSec: 0, non2xx: 0, errors: 0, cpuMs: 0 };
    const amount = Math.round(Math.min(o.maxRequests, Math.max(o.connections * 20, warm.okPerSec * o.seconds)));
    const requests = await presign(ctx.workdir.privateKey, amount + o.connections);
    const rss = new RssSampler(subject.pid, 200);
    const cpu = new CpuMeter({ subject: subject.pid, redis: ctx.redis.pid });
    const run = await runLoad(
      ctx.workdir,
      { mode: 'saturate', url, amount, connections: o.connections, timeoutSec: 10 },
      requests,
    );
    const cpuUsed = cpu.read();
    rss.stop();
    await sleep(ctx.options.smoke ? 200 : 2000);
    const rssAfter = rssOf(subject.pid);
    const queued = (await jobTotals(ctx.redis.admin, keyPrefix(prefix))).pending;
    const missing = Math.max(0, warm.ok + run.ok - queued);
    const figures: IngestFigures = {
      requests: run.sent,
      acceptedPerSec: Math.round(run.okPerSec),
      errors: run.non2xx + run.errors + missing + warm.non2xx + warm.errors,
      ack: run.ack,
      durationSec: run.durationSec,
      cpu: cpuFigures(cpuUsed, run.cpuMs, run.ok, run.durationSec * 1000),
      rssMaxMB: toMB(rss.max()),
      rssAfterMB: toMB(rssAfter),
    };
    ctx.log(
      `ingest ${kind} round ${round}: ${figures.acceptedPerSec}/s, p99 ${figures.ack.p99} ms, errors ${figures.errors}, ` +
        `CPU % of a core: subject ${figures.cpu.subjectPct}, redis ${figures.cpu.redisPct}, load ${figures.cpu.loadGeneratorPct}`,
    );
    return figures;
  } finally {
    await subject.stop();
  }
}

/** The best round counts: a neighbour's load only ever makes a round slower. Error-free rounds first. */
function best(rounds: IngestFigures[]): IngestFigures {
  const clean = rounds.filter((r) => r.errors === 0);
  const pool = clean.length > 0 ? clean : rounds;
  return pool.reduce((a, b) => (b.acceptedPerSec > a.acceptedPerSec ? b : a));
}

export async function runIngestPhase(ctx: BenchContext): Promise<IngestPhase> {
  const rounds: IngestPhase['rounds'] = { service: [], baseline: [], express: [] };
  const kinds: Kind[] = ['baseline', 'express', 'service'];
  for (let round = 1; round <= Math.max(1, ctx.options.ingest.rounds); round++) {
    // Rotate who goes first, so a slow spell on the machine does not always hit the same subject.
    const order = kinds.map((_, i) => kinds[(i + round - 1) % kinds.length] as Kind);
    for (const kind of order) rounds[kind].push(await ingestRound(ctx, kind, round));
  }
  return {
    connections: ctx.options.ingest.connections,
    service: best(rounds.service),
    baseline: best(rounds.baseline),
    expressBaseline: best(rounds.express),
    rounds,
  };
}

/**
 * The service against itself: ingest rounds with a feature off and on (`off`'s and `on`'s contexts),
 * alternating which goes first; the fastest round of each counts, among those with the fewest errors.
 */
export async function ingestOffOn(
  contexts: { off: BenchContext; on: BenchContext },
  label: string,
): Promise<OffOnIngest> {
  const ctx = contexts.off;
  const runs: { off: IngestFigures[]; on: IngestFigures[] } = { off: [], on: [] };
  const rounds = Math.max(1, ctx.options.ingest.rounds);
  for (let round = 1; round <= rounds; round++) {
    // Alternate who goes first, so a slow spell on the machine does not always hit the same one.
    const order: ('off' | 'on')[] = round % 2 === 1 ? ['off', 'on'] : ['on', 'off'];
    for (const mode of order) {
      ctx.log(`${label} ${mode}: ingest round ${round} of ${rounds}`);
      runs[mode].push(await ingestRound(contexts[mode], 'service', round));
    }
  }
  const fastest = (list: IngestFigures[]) =>
    list.reduce((a, b) => (b.errors <= a.errors && b.acceptedPerSec > a.acceptedPerSec ? b : a));
  return {
    off: fastest(runs.off),
    on: fastest(runs.on),
    rounds: { off: runs.off.map((r) => r.acceptedPerSec), on: runs.on.map((r) => r.acceptedPerSec) },
  };
}
