import type { BenchContext } from '../harness/context';
import { CpuMeter, cpuFigures } from '../harness/cpu';
import { FORWARDING_MISSING, serviceLogFile } from '../harness/context';
import type { LoadResult } from '../harness/load-protocol';
import { runLoad } from '../harness/load';
import { presign, type PresignedRequest } from '../harness/presign';
import { sleep } from '../harness/processes';
import type { FixedRateFigures, FixedRatePhase } from '../harness/results';
import { RssSampler, rssOf, toMB } from '../harness/rss';
import { summarize, type LatencySummary } from '../harness/stats';
import { startBaselineServer, startService, type Subject } from '../subjects/subjects';

type Kind = 'service' | 'baseline';

/** Receiver and delivery together: the service with ROLE=all, the baseline server with its raw worker in-process. */
export async function startFullSubject(ctx: BenchContext, kind: Kind, prefix: string): Promise<Subject> {
  const common = { redisUrl: ctx.redis.url, publicKeyFile: ctx.workdir.publicKeyFile, prefix };
  if (kind === 'baseline') {
    return startBaselineServer({
      ...common,
      sinkUrl: ctx.sink.url,
      rawConcurrency: ctx.options.drain.rawWorkerConcurrency,
      autoPipelining: ctx.options.baselineAutoPipelining,
    });
  }
  const configFile = ctx.workdir.writeServiceConfig(ctx.sink.url, ctx.options.drain.targetConcurrency);
  return startService({
    ...common,
    role: 'all',
    configFile,
    logFile: serviceLogFile(ctx, `full-${prefix}`),
    extraEnv: ctx.options.serviceEnv,
  });
}

export interface EndToEnd {
  e2e?: LatencySummary;
  undelivered?: number;
  skipped?: string;
}

/**
 * Pairs each accepted request's send time with the sink's first arrival of its event. Waits for
 * the deliveries first; a service that delivers nothing at all has no forwarding to measure.
 */
export async function endToEnd(
  ctx: BenchContext,
  kind: Kind,
  requests: readonly PresignedRequest[],
  load: LoadResult,
): Promise<EndToEnd> {
  if (kind === 'service' && !ctx.forwarding) return { skipped: FORWARDING_MISSING };
  const accepted = requests
    .map((r, i) => ({ r, i }))
    .filter(({ i }) => (load.status?.[i] ?? 0) >= 200 && (load.status?.[i] ?? 0) < 300);
  const wait = await ctx.sink.waitForUnique(accepted.length, {
    timeoutMs: 120_000,
    stallMs: 15_000,
    firstWithinMs: 15_000,
  });
  if (wait.stats.unique === 0 && accepted.length > 0)
    return { skipped: 'forwarding not available (nothing delivered within 15 s)' };
  const arrivals = await ctx.sink.arrivals();
  const latencies: number[] = [];
  let undelivered = 0;
  for (const { r, i } of accepted) {
    const arrivedAt = arrivals.get(r.requestId);
    const sentAt = load.sentAtMs?.[i];
    if (arrivedAt === undefined || sentAt === undefined) undelivered++;
    else latencies.push(arrivedAt - sentAt);
  }
  return { e2e: summarize(latencies), undelivered };
}

async function fixedRateRun(ctx: BenchContext, kind: Kind): Promise<FixedRateFigures> {
  const o = ctx.options.fixedRate;
  await ctx.redis.flush();
  await ctx.sink.reset();
  const subject = await startFullSubject(ctx, kind, `fixed${kind}`);
  try {
    const url = subject.url as string;
    const paced = {
      mode: 'paced' as const,
      url,
      rate: o.rate,
      connections: o.connections,
      timeoutSec: 10,
      windowSec: 5,
    };
    // Warm-up at the same rate (JIT, connection pools, workers polling), then let its deliveries finish.
    const warmCount = Math.round(o.rate * o.warmupSeconds);
    if (warmCount > 0) {
      await runLoad(ctx.workdir, paced, await presign(ctx.workdir.privateKey, warmCount));
      if (kind === 'baseline' || ctx.forwarding)
        await ctx.sink.waitForUnique(warmCount, { timeoutMs: 30_000, stallMs: 5000, firstWithinMs: 10_000 });
      await ctx.sink.reset();
    }

    const requests = await presign(ctx.workdir.privateKey, Math.max(1, Math.round(o.rate * o.seconds)));
    const rss = new RssSampler(subject.pid, 250);
    const cpu = new CpuMeter({ subject: subject.pid, redis: ctx.redis.pid });
    const load = await runLoad(ctx.workdir, paced, requests);
    const e2e = await endToEnd(ctx, kind, requests, load);
    const cpuUsed = cpu.read();
    rss.stop();
    await sleep(ctx.options.smoke ? 200 : 2000);
    const figures: FixedRateFigures = {
      sent: load.sent,
      errors: load.non2xx + load.errors,
      achievedPerSec: Math.round(load.okPerSec),
      ack: load.ack,
      ...(e2e.e2e ? { e2e: e2e.e2e, undelivered: e2e.undelivered } : {}),
      ...(e2e.skipped ? { e2eSkipped: e2e.skipped } : {}),
      generatorLagMs: load.lagMs ?? { p99: Number.NaN, max: Number.NaN },
      cpu: cpuFigures(cpuUsed, load.cpuMs, load.ok),
      rssMaxMB: toMB(rss.max()),
      rssAfterMB: toMB(rssOf(subject.pid)),
    };
    ctx.log(
      `fixed rate ${kind}: ack p99 ${figures.ack.p99} ms, e2e p99 ${figures.e2e?.p99 ?? e2e.skipped} ms, errors ${figures.errors}`,
    );
    return figures;
  } finally {
    await subject.stop();
  }
}

export async function runFixedRatePhase(ctx: BenchContext): Promise<FixedRatePhase> {
  const baseline = await fixedRateRun(ctx, 'baseline');
  const service = await fixedRateRun(ctx, 'service');
  return { rate: ctx.options.fixedRate.rate, seconds: ctx.options.fixedRate.seconds, service, baseline };
}
