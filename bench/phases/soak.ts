import type { BenchContext } from '../harness/context';
import { runLoad } from '../harness/load';
import { endToEnd, startFullSubject } from './fixed-rate';
import { presign } from '../harness/presign';
import type { SoakFigures, SoakPhase } from '../harness/results';
import { MB, RssSampler, toMB, type RssSample } from '../harness/rss';
import { slope } from '../harness/stats';

type Kind = 'service' | 'baseline';

/**
 * RSS saws up and down with garbage collection, so the trend is read from its floor (the 10th
 * percentile of each stretch: what is still live after a collection). Flat: the floor of the last
 * fifth of the run is within 10 MB (or 5 %) of the floor of the second fifth; the first fifth is
 * warm-up (JIT, pools, V8 sizing its heap to the load). The slope is fitted to 10-second floors.
 */
function rssTrend(samples: readonly RssSample[], seconds: number) {
  const floorOf = (from: number, to: number) => {
    const bytes = samples
      .filter((s) => s.t >= from && s.t < to)
      .map((s) => s.bytes)
      .sort((a, b) => a - b);
    return bytes.length === 0 ? Number.NaN : (bytes[Math.floor(bytes.length * 0.1)] as number);
  };
  const first = floorOf(0.2 * seconds, 0.4 * seconds);
  const last = floorOf(0.8 * seconds, seconds + 1);
  const step = Math.max(1, Math.min(10, seconds / 10));
  const floors: { x: number; y: number }[] = [];
  for (let from = 0.2 * seconds; from < seconds; from += step) {
    const y = floorOf(from, from + step);
    if (Number.isFinite(y)) floors.push({ x: from / 60, y: y / MB });
  }
  return {
    first,
    last,
    slopeMBPerMin: Math.round(slope(floors) * 100) / 100,
    flat: last - first <= Math.max(10 * MB, 0.05 * first),
  };
}

async function soakRun(ctx: BenchContext, kind: Kind, seconds: number): Promise<SoakFigures> {
  const { rate, sampleEveryMs } = ctx.options.soak;
  await ctx.redis.flush();
  await ctx.sink.reset();
  // Each request is signed for the moment it is due: the run may outlast the 5-minute window.
  const signedFrom = Date.now();
  const requests = await presign(ctx.workdir.privateKey, Math.max(1, Math.round(rate * seconds)), {
    timestampAt: (i) => signedFrom + (i * 1000) / rate,
  });
  const subject = await startFullSubject(ctx, kind, `soak${kind}`);
  try {
    const rss = new RssSampler(subject.pid, sampleEveryMs);
    const windowSec = ctx.options.smoke ? 0.5 : 60;
    const load = await runLoad(
      ctx.workdir,
      {
        mode: 'paced',
        url: subject.url as string,
        rate,
        connections: ctx.options.fixedRate.connections,
        timeoutSec: 10,
        windowSec,
      },
      requests,
    );
    const samples = rss.stop();
    const e2e = await endToEnd(ctx, kind, requests, load);
    const trend = rssTrend(samples, seconds);
    const figures: SoakFigures = {
      seconds,
      rate,
      errors: load.non2xx + load.errors,
      ack: load.ack,
      ...(e2e.e2e ? { e2e: e2e.e2e } : {}),
      ...(e2e.skipped ? { e2eSkipped: e2e.skipped } : {}),
      rssFloorFirstMB: toMB(trend.first),
      rssFloorLastMB: toMB(trend.last),
      rssMaxMB: toMB(rss.max()),
      rssSlopeMBPerMin: trend.slopeMBPerMin,
      flat: trend.flat,
      ackP99ByWindow: (load.windows ?? []).map((w) => ({ fromSec: w.fromSec, p99: w.ack.p99 })),
      rssSeries: samples
        .filter((_, i) => i % Math.max(1, Math.round(5000 / sampleEveryMs)) === 0)
        .map((s) => ({ t: Math.round(s.t), mb: toMB(s.bytes) })),
    };
    ctx.log(
      `soak ${kind}: RSS floor ${figures.rssFloorFirstMB} -> ${figures.rssFloorLastMB} MB (${figures.rssSlopeMBPerMin} MB/min), max ${figures.rssMaxMB} MB, ack p99 ${figures.ack.p99} ms`,
    );
    return figures;
  } finally {
    await subject.stop();
  }
}

/** The service for the full soak; the baseline for a shorter run, enough for its steady RSS. */
export async function runSoakPhase(ctx: BenchContext): Promise<SoakPhase> {
  const baseline = await soakRun(ctx, 'baseline', ctx.options.soak.baselineSeconds);
  const service = await soakRun(ctx, 'service', ctx.options.soak.seconds);
  return { service, baseline };
}
