import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { connect, type ChannelModel } from 'amqplib';
import { stringify } from 'yaml';
import { enqueueBacklog } from '../harness/backlog';
import type { BenchContext } from '../harness/context';
import { FORWARDING_MISSING, serviceLogFile } from '../harness/context';
import { cpuMsOf } from '../harness/cpu';
import type { AmqpPhase, MaybeAmqpDrain } from '../harness/results';
import { RssSampler, toMB } from '../harness/rss';
import { startRawAmqpWorkerProcess, startService, type Subject } from '../subjects/subjects';

type Kind = 'service' | 'baseline';

/** Counts distinct message ids arriving on a queue, with the times of the first and the last. */
class QueueCounter {
  private readonly seen = new Set<string>();
  firstAt = 0;
  lastAt = 0;
  add(id: string): void {
    if (this.seen.has(id)) return;
    this.seen.add(id);
    const now = performance.now();
    if (this.seen.size === 1) this.firstAt = now;
    this.lastAt = now;
  }
  get unique(): number {
    return this.seen.size;
  }
}

/**
 * Queues the backlog while nothing consumes it, starts the drainer (the service with ROLE=worker and
 * one amqp target, or the raw amqplib publisher) and times a consumer of the bound queue receiving
 * every event: first to last arrival, as the HTTP drain times its sink.
 */
async function amqpRun(
  ctx: BenchContext,
  mq: ChannelModel,
  kind: Kind,
  exchange: string,
  queue: string,
): Promise<MaybeAmqpDrain> {
  const { backlog, url } = ctx.options.amqp;
  const concurrency = ctx.options.drain.rawWorkerConcurrency;
  const targetConcurrency = ctx.options.drain.targetConcurrency;
  await ctx.redis.flush();
  const ch = await mq.createChannel();
  await ch.purgeQueue(queue);
  const counter = new QueueCounter();
  await ch.prefetch(1000);
  const { consumerTag } = await ch.consume(queue, (m) => {
    if (!m) return;
    counter.add(String(m.properties.messageId));
    ch.ack(m);
  });
  const prefix = `amqp${kind}`;
  const target = {
    name: 'mq',
    events: ['*'],
    concurrency: targetConcurrency,
    destination: { type: 'amqp', url, exchange, routingKey: 'bench.{type}' },
  };
  const { seconds } = await enqueueBacklog(kind, ctx.redis.url, prefix, backlog, { targets: [target], orderKeys: 0 });
  ctx.log(`amqp ${kind}: ${backlog} events queued in ${seconds.toFixed(1)} s`);
  let subject: Subject;
  if (kind === 'baseline') {
    subject = await startRawAmqpWorkerProcess({ redisUrl: ctx.redis.url, prefix, amqpUrl: url, exchange, concurrency });
  } else {
    const configFile = ctx.workdir.file('service-amqp.yaml');
    writeFileSync(configFile, stringify({ targets: [target] }));
    subject = await startService({
      redisUrl: ctx.redis.url,
      publicKeyFile: ctx.workdir.publicKeyFile,
      prefix,
      role: 'worker',
      configFile,
      logFile: serviceLogFile(ctx, `amqp-${kind}`),
      extraEnv: ctx.options.serviceEnv,
    });
  }
  const rss = new RssSampler(subject.pid, 500);
  const cpuAtStart = cpuMsOf(subject.pid);
  let cpu = 0;
  try {
    const deadline = Date.now() + 60_000 + (backlog / 100) * 1000;
    let progressAt = Date.now();
    let last = 0;
    while (counter.unique < backlog && Date.now() < deadline && Date.now() - progressAt < 60_000) {
      await new Promise((r) => setTimeout(r, 50));
      if (counter.unique !== last) [last, progressAt] = [counter.unique, Date.now()];
    }
  } finally {
    rss.stop();
    cpu = cpuMsOf(subject.pid) - cpuAtStart;
    await subject.stop();
    await ch.cancel(consumerTag);
    await ch.close();
  }
  if (counter.unique === 0) return { skipped: 'nothing reached RabbitMQ within 60 s' };
  const figures = {
    backlog,
    delivered: counter.unique,
    eventsPerSec: Math.round(((counter.unique - 1) / Math.max(1, counter.lastAt - counter.firstAt)) * 1000),
    cpuMsPerDelivery: Math.round((cpu / counter.unique) * 1000) / 1000,
    rssMaxMB: toMB(rss.max()),
  };
  ctx.log(
    `amqp ${kind}: ${figures.eventsPerSec} events/s to RabbitMQ (${figures.delivered} of ${backlog}), CPU ms per delivery ${figures.cpuMsPerDelivery}, RSS max ${figures.rssMaxMB} MB`,
  );
  return figures;
}

const rateOf = (d: MaybeAmqpDrain): number => ('skipped' in d ? Number.NaN : d.eventsPerSec);

/**
 * The service's delivery worker and raw amqplib publishers with confirms (bench/subjects/raw-amqp-worker.ts)
 * drain the same backlog into one durable queue bound to a fresh exchange, `rounds` times each,
 * alternating who goes first; the best round of each counts. Skipped when RabbitMQ is not reachable.
 */
export async function runAmqpPhase(ctx: BenchContext): Promise<AmqpPhase> {
  const { backlog, url, rounds } = ctx.options.amqp;
  const skipped = (why: string): AmqpPhase => ({ backlog, service: { skipped: why }, baseline: { skipped: why } });
  if (!ctx.forwarding) return skipped(FORWARDING_MISSING);
  let mq: ChannelModel;
  try {
    mq = await connect(url);
  } catch (err) {
    return skipped(`RabbitMQ not reachable at BENCH_AMQP_URL (${(err as Error).message})`);
  }
  const name = `whr-bench-${randomBytes(4).toString('hex')}`;
  const setup = await mq.createChannel();
  try {
    await setup.assertExchange(name, 'topic', { durable: false, autoDelete: false });
    await setup.assertQueue(name, { durable: true });
    await setup.bindQueue(name, name, 'bench.#');
    const runs: Record<Kind, MaybeAmqpDrain[]> = { baseline: [], service: [] };
    for (let round = 1; round <= Math.max(1, rounds); round++) {
      for (const kind of (round % 2 === 1 ? ['baseline', 'service'] : ['service', 'baseline']) as Kind[])
        runs[kind].push(await amqpRun(ctx, mq, kind, name, name));
    }
    const best = (r: MaybeAmqpDrain[]) =>
      r.reduce((a, b) => (rateOf(b) > rateOf(a) || Number.isNaN(rateOf(a)) ? b : a));
    return {
      backlog,
      service: best(runs.service),
      baseline: best(runs.baseline),
      ...(rounds > 1 ? { rounds: { service: runs.service.map(rateOf), baseline: runs.baseline.map(rateOf) } } : {}),
    };
  } finally {
    await setup.deleteQueue(name).catch(() => undefined);
    await setup.deleteExchange(name).catch(() => undefined);
    await mq.close().catch(() => undefined);
  }
}
