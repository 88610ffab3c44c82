import { connect as amqpConnect, type ChannelModel, type ConsumeMessage } from 'amqplib';
import { connect as natsConnect } from '@nats-io/transport-node';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/nats-core';
import { Redis } from 'ioredis';
import { buildForwarding, perWindow, waitUntil, type ForwardingHarness } from './support/forwarding-harness';
import { FakePlatform } from './support/platform';
import { NatsServer, RabbitServer } from './support/broker-servers';
import { RedisServer } from './support/redis-server';
import { establishedTo } from './support/open-sockets';
import { timersKeepingAlive } from './support/live-timers';
import { tempDir } from './support/temp-dir';
import { eventIdFor } from '../src/model/ids';
import { createTargetControl } from '../src/operations/targets';
import type { DeliveryFailure } from '../src/model/jobs';

// A private RabbitMQ, nats-server -js and redis-server (append-only file, fsync always), each started
// once for the file on free ports, so a test may stop, restart or freeze them.
jest.setTimeout(60000);

const platform = new FakePlatform();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let rabbit: RabbitServer;
let nats: NatsServer;
let streams: RedisServer;
let mq: ChannelModel;
let nc: NatsConnection;
let jsm: JetStreamManager;
let redis: Redis;
let f: ForwardingHarness | undefined;

async function openMq(): Promise<ChannelModel> {
  const model = await amqpConnect(rabbit.url);
  model.on('error', () => undefined); // the broker is restarted under it
  return model;
}

beforeAll(async () => {
  const aof = ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', tempDir('stream-redis')];
  [rabbit, nats, streams] = await Promise.all([
    RabbitServer.start(),
    NatsServer.start(),
    RedisServer.start({ args: aof }),
  ]);
  mq = await openMq();
  nc = await natsConnect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  jsm = await jetstreamManager(nc);
  redis = new Redis(streams.url);
  redis.on('error', () => undefined);
}, 90000);

afterEach(async () => {
  await f?.close();
  f = undefined;
});

afterAll(async () => {
  redis?.disconnect();
  await nc?.close();
  await mq?.close().catch(() => undefined);
  await Promise.all([rabbit?.stop(), nats?.stop(), streams?.stop()]);
});

/** Sends one payment.result with `data`; answers its event id once the receiver acknowledged it (200). */
async function notify(data: Record<string, unknown>): Promise<string> {
  const body = JSON.stringify({ type: 'PAY', data });
  await platform.send(f!.receiver.app, platform.signed('payment.result', { body })).expect(200);
  return eventIdFor('payment.result', 'production', Buffer.from(body));
}

/** `count` notifications, 20 at a time; their event ids. */
async function notifyMany(count: number, tag: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i += 20) {
    ids.push(
      ...(await Promise.all(
        Array.from({ length: Math.min(20, count - i) }, (_, j) =>
          notify({ request_id: `${tag}-${i + j}`, currency: 'USD' }),
        ),
      )),
    );
  }
  return ids;
}

/** A durable topic exchange and a durable queue bound to it for `platform.#`, on the private RabbitMQ. */
async function durableQueue(name: string): Promise<void> {
  const ch = await mq.createChannel();
  await ch.assertExchange(name, 'topic', { durable: true });
  await ch.assertQueue(name, { durable: true });
  await ch.bindQueue(name, name, 'platform.#');
  await ch.close();
}

/** Every message in the queue, in queue order (taken off it). */
async function drainQueue(name: string, expected: number): Promise<ConsumeMessage[]> {
  const ch = await mq.createChannel();
  const got: ConsumeMessage[] = [];
  await ch.consume(name, (m) => m && got.push(m), { noAck: true });
  await waitUntil(() => got.length >= expected, 20000, `${expected} messages from queue ${name}`);
  await sleep(200); // nothing more arrives
  await ch.close();
  return got;
}

/** The messages of a JetStream stream, in stream order. */
async function storedIn(stream: string): Promise<{ id: string; body: string; time: number }[]> {
  const info = await jsm.streams.info(stream);
  const out = [];
  for (let seq = info.state.first_seq; info.state.messages > 0 && seq <= info.state.last_seq; seq++) {
    const m = await jsm.streams.getMessage(stream, { seq });
    if (m) out.push({ id: m.header.get('Nats-Msg-Id'), body: m.string(), time: m.time.getTime() });
  }
  return out;
}

function countBy(ids: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  return counts;
}

/** The failed attempts the worker recorded in each job's log. */
async function failuresOf(target: string, ids: readonly string[]): Promise<DeliveryFailure[]> {
  const queue = f!.pipeline.deliveryQueue(target)!;
  const logs = await Promise.all(ids.map((id) => queue.getJobLogs(id, 0, -1)));
  return logs.flatMap((l) => l.logs.map((line) => JSON.parse(line) as DeliveryFailure));
}

describe('a broker target', () => {
  it('when a target is paused, with a filter, ordered keys and a rate limit, then nothing is published until it is resumed, the filtered event never is, each key arrives in receipt order and the limit holds', async () => {
    await durableQueue('ordered');
    await jsm.streams.add({ name: 'ORDERED', subjects: ['ordered.>'] });
    const common = {
      filter: { 'data.currency': { $in: ['USD', 'EUR'] } },
      order: { key: 'data.request_id' },
      rateLimit: { max: 5, perMs: 500 },
      concurrency: 8,
    };
    f = buildForwarding(platform, [
      {
        name: 'ledger-bus',
        destination: { type: 'amqp', url: rabbit.url, exchange: 'ordered', routingKey: 'platform.{type}' },
        ...common,
      },
      { name: 'risk-stream', destination: { type: 'nats', servers: [nats.url], subject: 'ordered.{type}' }, ...common },
    ]);
    const control = createTargetControl(f.pipeline);
    await control.pause('ledger-bus');
    await control.pause('risk-stream');

    // Three keys of five steps each, interleaved; one GBP event per key is filtered out.
    const keys = ['ORD-A', 'ORD-B', 'ORD-C'];
    const filtered: string[] = [];
    await Promise.all(
      keys.map(async (key) => {
        for (let step = 1; step <= 5; step++) {
          await notify({ request_id: key, step, currency: step % 2 ? 'USD' : 'EUR' });
          if (step === 3) filtered.push(await notify({ request_id: key, step: 99, currency: 'GBP' }));
        }
      }),
    );
    await sleep(500);
    expect(
      await mq
        .createChannel()
        .then(async (ch) => (await ch.checkQueue('ordered')).messageCount + (await ch.close(), 0)),
    ).toBe(0);
    expect((await jsm.streams.info('ORDERED')).state.messages).toBe(0);
    for (const target of ['ledger-bus', 'risk-stream']) {
      const counts = await f.pipeline
        .deliveryQueue(target)!
        .getJobCounts('wait', 'delayed', 'prioritized', 'active', 'completed');
      expect(counts.completed).toBe(0);
      expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(15); // the filtered three were never queued
    }

    await control.resume('ledger-bus');
    await control.resume('risk-stream');
    const amqpGot = (await drainQueue('ordered', 15)).map(
      (m) => JSON.parse(m.content.toString()) as { id: string; data: { data: { request_id: string; step: number } } },
    );
    await waitUntil(async () => (await jsm.streams.info('ORDERED')).state.messages >= 15, 20000, 'the stream has 15');
    const natsGot = (await storedIn('ORDERED')).map(
      (m) => JSON.parse(m.body) as { id: string; data: { data: { request_id: string; step: number } } },
    );

    for (const got of [amqpGot, natsGot]) {
      expect(got).toHaveLength(15);
      for (const key of keys)
        expect(got.filter((m) => m.data.data.request_id === key).map((m) => m.data.data.step)).toEqual([1, 2, 3, 4, 5]);
      expect(got.map((m) => m.id).filter((id) => filtered.includes(id))).toEqual([]);
    }
    // The limit, replayed on when each delivery started: BullMQ's limiter opens a window of perMs at the
    // first job after the previous one closed and lets `max` start in it (25 ms shorter for clock jitter).
    for (const target of ['ledger-bus', 'risk-stream']) {
      const queue = f.pipeline.deliveryQueue(target)!;
      await waitUntil(async () => (await queue.getCompletedCount()) === 15, 10000, `${target}: 15 completed`);
      const times = (await queue.getCompleted(0, 20)).map((j) => j.processedOn!).sort((a, b) => a - b);
      expect(times[14]! - times[0]!).toBeGreaterThanOrEqual(950); // 15 at 5 per 500 ms: three windows at least
      expect(Math.max(...perWindow(times, 475))).toBeLessThanOrEqual(5);
    }
  });

  it('when every broker is frozen (SIGSTOP) with deliveries in flight, then closing the workers ends within the shutdown bound and leaves no connection to any broker open', async () => {
    await durableQueue('frozen');
    await jsm.streams.add({ name: 'FROZEN', subjects: ['frozen.>'] });
    const baseline = [rabbit.port, nats.port, streams.port].map(establishedTo);
    const timersBefore = timersKeepingAlive();
    f = buildForwarding(platform, [
      {
        name: 'ledger-bus',
        destination: { type: 'amqp', url: rabbit.url, exchange: 'frozen', routingKey: 'platform.{type}' },
        timeoutMs: 5000,
      },
      {
        name: 'risk-stream',
        destination: { type: 'nats', servers: [nats.url], subject: 'frozen.{type}' },
        timeoutMs: 5000,
      },
      {
        name: 'audit-stream',
        destination: { type: 'redis-stream', url: streams.url, stream: 'frozen' },
        timeoutMs: 5000,
      },
    ]);
    const first = await notifyMany(5, 'warm');
    await waitUntil(
      async () => (await jsm.streams.info('FROZEN')).state.messages === 5 && (await redis.xlen('frozen')) === 5,
      10000,
      'connections open',
    );
    await waitUntil(
      async () => (await f!.pipeline.deliveryQueue('ledger-bus')!.getCompletedCount()) === first.length,
      10000,
      'RabbitMQ confirmed',
    );
    // One connection per destination, beside the test's own.
    expect([rabbit.port, nats.port, streams.port].map(establishedTo)).toEqual(baseline.map((n) => n + 1));

    rabbit.pause();
    nats.pause();
    streams.pause();
    try {
      await notifyMany(20, 'frozen');
      await waitUntil(
        async () => (await f!.pipeline.deliveryQueue('audit-stream')!.getActiveCount()) > 0,
        5000,
        'deliveries in flight',
      );
      const started = Date.now();
      await f.close();
      const took = Date.now() - started;
      const { shutdownTimeoutMs } = f.config.worker;
      f = undefined;
      // The bound: the graceful stop (shutdownTimeoutMs), two forced steps, then each destination's close step (1 s each).
      expect(took).toBeLessThan(shutdownTimeoutMs + 3 * 1000);
      // The process's side of each broker connection is gone, though no broker answered a close.
      expect([rabbit.port, nats.port, streams.port].map(establishedTo)).toEqual(baseline);
      // Nor does any client still count its connection open: once the cut sockets' last callbacks have run,
      // no timer of theirs (a heartbeat, a command timeout) keeps the process alive.
      await waitUntil(
        () => timersKeepingAlive() <= timersBefore,
        5000,
        `no more timers keeping the process alive than the ${timersBefore} before the workers`,
      );
    } finally {
      rabbit.resume();
      nats.resume();
      streams.resume();
    }
  });

  it('when each broker is restarted mid-run (same port, same data), then every acknowledged event arrives, each transport reconnects by itself and says so once, and no send outlasts its timeoutMs', async () => {
    await durableQueue('restart');
    await jsm.streams.add({ name: 'RESTART', subjects: ['restart.>'], duplicate_window: nanos(120_000) });
    const TIMEOUT_MS = 1000;
    const opts = { timeoutMs: TIMEOUT_MS, maxAttempts: 100, backoff: { initialMs: 200, maxMs: 1000 } };
    const targets = [
      {
        name: 'ledger-bus',
        broker: 'RabbitMQ',
        destination: { type: 'amqp', url: rabbit.url, exchange: 'restart', routingKey: 'platform.{type}' },
      },
      {
        name: 'risk-stream',
        broker: 'NATS',
        destination: { type: 'nats', servers: [nats.url], subject: 'restart.{type}' },
      },
      {
        name: 'audit-stream',
        broker: 'Redis stream',
        destination: { type: 'redis-stream', url: streams.url, stream: 'restart' },
      },
    ];
    f = buildForwarding(
      platform,
      targets.map(({ broker: _, ...t }) => ({ ...t, ...opts })),
    );

    const before = await notifyMany(40, 'before');
    await waitUntil(
      async () => (await jsm.streams.info('RESTART')).state.messages >= 10 && (await redis.xlen('restart')) >= 10,
      10000,
      'the first deliveries',
    );
    await Promise.all([rabbit.stop(false), nats.stop(), streams.stop()]);
    const during = await notifyMany(40, 'during'); // acknowledged while every broker is down
    await sleep(1500);
    await Promise.all([rabbit.start(), nats.start(), streams.start()]);
    const after = await notifyMany(40, 'after');
    const acknowledged = [...before, ...during, ...after];

    mq = await openMq(); // the test's own connection went with the old broker
    const amqpIds = countBy(
      (await drainQueue('restart', acknowledged.length)).map((m) => m.properties.messageId as string),
    );
    await waitUntil(
      async () => (await jsm.streams.info('RESTART')).state.messages >= acknowledged.length,
      30000,
      'the stream has every event',
    );
    const natsIds = countBy((await storedIn('RESTART')).map((m) => m.id));
    await waitUntil(
      async () => (await redis.xlen('restart')) >= acknowledged.length,
      30000,
      'the Redis stream has every event',
    );
    const redisIds = countBy((await redis.xrange('restart', '-', '+')).map(([, fields]) => fields[1]!));
    for (const id of acknowledged) {
      expect(amqpIds.get(id)).toBeGreaterThanOrEqual(1); // a confirm lost with the broker is published again
      expect(natsIds.get(id)).toBe(1); // JetStream drops the republished duplicate
      expect(redisIds.get(id)).toBeGreaterThanOrEqual(1);
    }
    expect(natsIds.size).toBe(acknowledged.length);

    for (const { name, broker } of targets) {
      const lines = f.logs.lines.filter((l) => l.target === name);
      // One line down and one line back, however many deliveries failed in between.
      expect(lines.filter((l) => l.message === `${broker} connection lost; reconnecting with backoff`)).toHaveLength(1);
      expect(lines.filter((l) => l.message === `${broker} connection restored`)).toHaveLength(1);
      // The outage failed attempts, each within the target's timeoutMs (timers on a busy machine fire late: half of it again).
      const failures = await failuresOf(name, acknowledged);
      expect(failures.length).toBeGreaterThan(0);
      for (const failure of failures) expect(failure.latencyMs).toBeLessThanOrEqual(TIMEOUT_MS * 1.5);
    }
  });
});
