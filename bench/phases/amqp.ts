import { randomBytes } from 'node:crypto';
import { connect, type ChannelModel } from 'amqplib';
import type { BenchContext } from '../harness/context';
import { FORWARDING_MISSING } from '../harness/context';
import {
  drainFigures,
  interleavedRounds,
  queueAndStartDrainer,
  watchDrainer,
  type DrainerKind,
} from '../harness/drainer';
import type { AmqpPhase, MaybeAmqpDrain } from '../harness/results';

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
  kind: DrainerKind,
  exchange: string,
  queue: string,
): Promise<MaybeAmqpDrain> {
  const { backlog, url } = ctx.options.amqp;
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
  const subject = await queueAndStartDrainer(
    ctx,
    kind,
    'amqp',
    backlog,
    { type: 'amqp', url, exchange, routingKey: 'bench.{type}' },
    { script: 'subjects/raw-amqp-worker', env: { AMQP_URL: url, AMQP_EXCHANGE: exchange } },
  );
  let used: { cpuMs: number; rssMaxMB: number };
  try {
    used = await watchDrainer(subject, backlog, () => counter.unique);
  } finally {
    await ch.cancel(consumerTag);
    await ch.close();
  }
  if (counter.unique === 0) return { skipped: 'nothing reached RabbitMQ within 60 s' };
  const span = counter.lastAt - counter.firstAt;
  const figures = drainFigures(backlog, counter.unique, span, used.cpuMs, used.rssMaxMB);
  ctx.log(
    `amqp ${kind}: ${figures.eventsPerSec} events/s to RabbitMQ (${figures.delivered} of ${backlog}), CPU ms per delivery ${figures.cpuMsPerDelivery}, RSS max ${figures.rssMaxMB} MB`,
  );
  return figures;
}

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
    return { backlog, ...(await interleavedRounds(rounds, (kind) => amqpRun(ctx, mq, kind, name, name))) };
  } finally {
    await setup.deleteQueue(name).catch(() => undefined);
    await setup.deleteExchange(name).catch(() => undefined);
    await mq.close().catch(() => undefined);
  }
}
