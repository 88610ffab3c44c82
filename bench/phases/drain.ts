import { enqueueBacklog } from '../harness/backlog';
import { keyPrefix } from '../../src/model/names';
import type { BenchContext } from '../harness/context';
import { FORWARDING_MISSING } from '../harness/context';
import { startWorkerService } from '../harness/drainer';
import { cpuMsOf } from '../harness/cpu';
import { sleep } from '../harness/processes';
import { expireRetainedCompleted, waitUntilSettled } from '../harness/queues';
import { censusKeys, expireExpiringKeys, memoryUsage } from '../harness/redis';
import type { DrainFigures, DrainPhase, MaybeDrain } from '../harness/results';
import { RssSampler, rssOf, toMB } from '../harness/rss';
import { startRawWorkerProcess, type Subject } from '../subjects/subjects';
import { benchTargets } from '../harness/workdir';

type Kind = 'service' | 'baseline';

/** Events of an ordered drain spread over this many ordering keys (the figure docs/benchmarks.md reports). */
export const ORDERED_DRAIN_KEYS = 1000;

/** The service's multi-target drain: the same backlog fanned out to this many targets. */
export const MULTI_TARGETS = 3;

async function startDrainer(
  ctx: BenchContext,
  kind: Kind,
  prefix: string,
  label: string,
  orderKeys: number,
  targetCount: number,
  extra: Record<string, unknown>,
): Promise<Subject> {
  if (kind === 'baseline') {
    return startRawWorkerProcess({
      redisUrl: ctx.redis.url,
      prefix,
      sinkUrl: ctx.sink.url,
      concurrency: ctx.options.drain.rawWorkerConcurrency,
    });
  }
  const configFile = ctx.workdir.writeServiceConfig(
    ctx.sink.url,
    ctx.options.drain.targetConcurrency,
    orderKeys,
    targetCount,
    extra,
  );
  return startWorkerService(ctx, prefix, configFile, label);
}

/**
 * Queues `backlog` events while nothing consumes them, then starts the drainer (the service with
 * ROLE=worker, or the raw worker) and times the sink receiving all of them. Afterwards: what Redis
 * still holds right after the drain, once retention has removed completed jobs, and once the keys
 * with a TTL (de-duplication, request-id index) have gone too, each against its starting level.
 * `extra`: more settings of the service's target (a transform).
 */
export async function drainRun(
  ctx: BenchContext,
  kind: Kind,
  backlog: number,
  label: string,
  orderKeys = 0,
  targetCount = 1,
  extra: Record<string, unknown> = {},
): Promise<MaybeDrain> {
  await ctx.redis.flush();
  await ctx.sink.reset();
  const prefix = `${label}${kind}`;
  const redisStart = await ctx.redis.usedMemory();
  const targets = benchTargets(ctx.sink.url, ctx.options.drain.targetConcurrency, orderKeys, targetCount, extra);
  // One delivery per event and target: the sink counts each target's apart.
  const deliveries = backlog * targetCount;
  const { seconds: enqueueSec } = await enqueueBacklog(kind, ctx.redis.url, prefix, backlog, { targets, orderKeys });
  const redisQueued = await ctx.redis.usedMemory();
  ctx.log(
    `${label} ${kind}: ${backlog} events queued in ${enqueueSec.toFixed(1)} s, ${((redisQueued - redisStart) / backlog).toFixed(0)} B each`,
  );

  const spawnedAt = Date.now();
  const subject = await startDrainer(ctx, kind, prefix, `${label}-${kind}`, orderKeys, targetCount, extra);
  const rss = new RssSampler(subject.pid, 500);
  const cpuAtStart = { subject: cpuMsOf(subject.pid), redis: cpuMsOf(ctx.redis.pid) };
  const drained = (async () => {
    // Bounded by a floor rate of 100 events/s, and by 60 s without progress.
    const wait = await ctx.sink.waitForUnique(deliveries, {
      timeoutMs: 60_000 + (deliveries / 100) * 1000,
      stallMs: 60_000,
      firstWithinMs: 60_000,
    });
    const cpu = {
      subject: cpuMsOf(subject.pid) - cpuAtStart.subject,
      redis: cpuMsOf(ctx.redis.pid) - cpuAtStart.redis,
    };
    rss.stop();
    await waitUntilSettled(ctx.redis.admin, keyPrefix(prefix), 30_000);
    await sleep(ctx.options.smoke ? 200 : 2000);
    return { wait, cpu, rssAfter: rssOf(subject.pid) };
  })();
  const { wait, cpu, rssAfter } = await drained.finally(() => subject.stop());
  if (wait.stats.unique === 0) return { skipped: 'forwarding not available (nothing delivered within 60 s)' };
  const { stats } = wait;
  const totals = await waitUntilSettled(ctx.redis.admin, keyPrefix(prefix), 1000);
  const redisAfterDrain = await ctx.redis.usedMemory();
  await expireRetainedCompleted(ctx.redis.admin, keyPrefix(prefix));
  const redisAfterRetention = await ctx.redis.usedMemory();
  const census = await censusKeys(ctx.redis.admin, keyPrefix(prefix));
  const remembered = await memoryUsage(ctx.redis.admin, keyPrefix(prefix));
  // Replay keys (accepted nonces) expire after twice the timestamp tolerance, not the window: shown apart.
  const replayBytes = Object.entries(remembered.byKind)
    .filter(([kind]) => kind.startsWith('replay:'))
    .reduce((sum, [, k]) => sum + k.bytes, 0);
  await expireExpiringKeys(ctx.redis.admin, keyPrefix(prefix));
  // Redis shrinks its emptied key tables in its background cron, not at once.
  await sleep(ctx.options.smoke ? 300 : 2000);
  const redisAfterExpiry = await ctx.redis.usedMemory();
  const drainedMs = Math.max(1, stats.lastAtMs - stats.firstAtMs);
  const figures: DrainFigures = {
    backlog,
    targets: targetCount,
    delivered: stats.unique,
    eventsPerSec: Math.round(((stats.unique - 1) / drainedMs / targetCount) * 1000),
    deliveriesPerSec: Math.round(((stats.unique - 1) / drainedMs) * 1000),
    totalSec: Math.round(stats.lastAtMs - spawnedAt) / 1000,
    cpuMsPerDelivery: Math.round((cpu.subject / stats.unique) * 1000) / 1000,
    redisCpuMsPerDelivery: Math.round((cpu.redis / stats.unique) * 1000) / 1000,
    enqueueSec: Math.round(enqueueSec * 10) / 10,
    redisStartMB: toMB(redisStart),
    redisBytesPerQueuedEvent: Math.round((redisQueued - redisStart) / backlog),
    redisAfterDrainMB: toMB(redisAfterDrain),
    redisAfterRetentionMB: toMB(redisAfterRetention),
    expiringKeys: census.expiring,
    expiringBytesPerEvent: Math.round((redisAfterRetention - redisAfterExpiry) / backlog),
    redisAfterExpiryMB: toMB(redisAfterExpiry),
    eventStreamMB: toMB(census.eventStreamBytes),
    persistentKeys: census.other,
    residualBytesPerEvent: Math.round((redisAfterExpiry - redisStart - census.eventStreamBytes) / backlog),
    rememberedBytesPerEvent: Math.round((remembered.bytes - replayBytes) / backlog),
    replayBytesPerEvent: Math.round(replayBytes / backlog),
    failedJobs: totals.failed,
    rssMaxMB: toMB(rss.max()),
    rssAfterMB: toMB(rssAfter),
  };
  ctx.log(
    `${label} ${kind}: ${figures.eventsPerSec} events/s (${targetCount} target${targetCount > 1 ? 's' : ''}, ${figures.deliveriesPerSec} deliveries/s), CPU ms per delivery ${figures.cpuMsPerDelivery} (redis ${figures.redisCpuMsPerDelivery}); Redis above start: after drain ${toMB(redisAfterDrain - redisStart)} MB, ` +
      `after retention ${toMB(redisAfterRetention - redisStart)} MB (${census.expiring} keys with a TTL, ${census.jobs} job keys, ${census.other} others), ` +
      `after TTLs ${toMB(redisAfterExpiry - redisStart)} MB`,
  );
  const breakdown = Object.entries(remembered.byKind).map(
    ([kind, k]) => `${kind} ${k.keys} keys ${Math.round(k.bytes / backlog)} B/event`,
  );
  ctx.log(`${label} ${kind}: remembered per event ${figures.rememberedBytesPerEvent} B (${breakdown.join(', ')})`);
  if (!wait.complete)
    ctx.log(`${label} ${kind}: WARNING only ${stats.unique} of ${deliveries} deliveries within the bound`);
  return figures;
}

/** The best round counts: a neighbour's load only ever makes a round slower. */
export function best(runs: MaybeDrain[]): MaybeDrain {
  const done = runs.filter((r): r is DrainFigures => !('skipped' in r));
  if (done.length === 0) return runs[0] ?? { skipped: 'no round ran' };
  return done.reduce((a, b) => (b.eventsPerSec > a.eventsPerSec ? b : a));
}

export const rateOf = (d: MaybeDrain): number => ('skipped' in d ? Number.NaN : d.eventsPerSec);

/**
 * The raw worker and the service drain the same backlog to one target, `rounds` times each,
 * interleaved and alternating who goes first; the best round of each counts. With `ordered`, the
 * service drains it again to a target ordered by a key that spreads the events over
 * {@link ORDERED_DRAIN_KEYS}; with `multiTarget`, again to {@link MULTI_TARGETS} targets (a delivery
 * job per event and target). Those run once.
 */
export async function runDrainPhase(
  ctx: BenchContext,
  backlog: number,
  label: string,
  extras: { ordered?: boolean; multiTarget?: boolean; rounds?: number } = {},
): Promise<DrainPhase> {
  const runs: Record<Kind, MaybeDrain[]> = { baseline: [], service: [] };
  const rounds = Math.max(1, extras.rounds ?? 1);
  for (let round = 1; round <= rounds; round++) {
    const order: Kind[] = round % 2 === 1 ? ['baseline', 'service'] : ['service', 'baseline'];
    for (const kind of order) {
      if (rounds > 1) ctx.log(`${label} ${kind}: round ${round} of ${rounds}`);
      runs[kind].push(
        kind === 'service' && !ctx.forwarding
          ? { skipped: FORWARDING_MISSING }
          : await drainRun(ctx, kind, backlog, label),
      );
    }
  }
  const phase: DrainPhase = { backlog, service: best(runs.service), baseline: best(runs.baseline) };
  if (rounds > 1) phase.rounds = { service: runs.service.map(rateOf), baseline: runs.baseline.map(rateOf) };
  if (extras.ordered) {
    const keys = Math.min(ORDERED_DRAIN_KEYS, backlog);
    phase.ordered = {
      keys,
      drain: ctx.forwarding
        ? await drainRun(ctx, 'service', backlog, `${label}ordered`, keys)
        : { skipped: FORWARDING_MISSING },
    };
  }
  if (extras.multiTarget) {
    phase.multiTarget = {
      targets: MULTI_TARGETS,
      drain: ctx.forwarding
        ? await drainRun(ctx, 'service', backlog, `${label}multi`, 0, MULTI_TARGETS)
        : { skipped: FORWARDING_MISSING },
    };
  }
  return phase;
}
