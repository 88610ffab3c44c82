import { connect as amqpConnect, type ChannelModel, type ConsumeMessage } from 'amqplib';
import { connect as natsConnect } from '@nats-io/transport-node';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/nats-core';
import { Redis } from 'ioredis';
import { Webhook } from 'standardwebhooks';
import { buildForwarding, waitUntil, type ForwardingHarness } from './support/forwarding-harness';
import { FakePlatform } from './support/platform';
import { NatsServer, RabbitServer } from './support/broker-servers';
import { RedisServer } from './support/redis-server';
import { eventIdFor } from '../src/model/ids';
import { targetSchema } from '../src/model/target-schema';
import { sampleBody } from '../src/signing/samples';
import type { DeliveryResult } from '../src/model/jobs';
import { runCli } from '../src/cli/run';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { freePort } from './support/redis-server';
import { testRedisUrl } from './support/harness';
import { tempDir } from './support/temp-dir';

// Real brokers, each started once for the file on free ports: a private RabbitMQ (about 3-7 s to
// start), nats-server -js with its own store, and a second redis-server for the streams.
jest.setTimeout(60000);

const platform = new FakePlatform();
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const EVENTS = 200;

let rabbit: RabbitServer;
let nats: NatsServer;
let streams: RedisServer;
let mq: ChannelModel;
let nc: NatsConnection;
let jsm: JetStreamManager;
let redis: Redis;
let f: ForwardingHarness | undefined;
let run = 0;

beforeAll(async () => {
  [rabbit, nats, streams] = await Promise.all([RabbitServer.start(), NatsServer.start(), RedisServer.start()]);
  mq = await amqpConnect(rabbit.url);
  nc = await natsConnect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
  redis = new Redis(streams.url);
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

/** A fresh exchange, queue and consumer on the private RabbitMQ; records every message it receives. */
async function amqpConsumer(name: string) {
  const ch = await mq.createChannel();
  await ch.assertExchange(name, 'topic', { durable: false, autoDelete: false });
  await ch.assertQueue(name, { durable: true });
  await ch.bindQueue(name, name, 'platform.#');
  const received: ConsumeMessage[] = [];
  await ch.consume(name, (m) => m && received.push(m), { noAck: true });
  return { received, exchange: name, close: () => ch.close() };
}

/** A fresh stream capturing `<name>.>`, with a core subscription counting every publish to it (duplicates too). */
async function natsStream(name: string) {
  await jsm.streams.add({ name, subjects: [`${name}.>`], duplicate_window: nanos(120_000) });
  const published: string[] = [];
  const sub = nc.subscribe(`${name}.>`, {
    callback: (_err, m) => void published.push(m.headers?.get('Nats-Msg-Id') ?? ''),
  });
  return {
    published,
    subject: `${name}.{type}`,
    async stored(): Promise<{
      ids: string[];
      first?: { subject: string; headers: Record<string, string>; body: string };
    }> {
      const info = await jsm.streams.info(name);
      const ids: string[] = [];
      let first;
      for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
        const m = await jsm.streams.getMessage(name, { seq });
        if (!m) continue;
        ids.push(m.header.get('Nats-Msg-Id'));
        if (!first) {
          const headers: Record<string, string> = {};
          for (const key of m.header.keys()) headers[key] = m.header.get(key);
          first = { subject: m.subject, headers, body: m.string() };
        }
      }
      return { ids, first };
    },
    close: () => sub.unsubscribe(),
  };
}

/** The `id` field of every entry of a stream on the second Redis. */
async function streamEntries(stream: string): Promise<Record<string, string>[]> {
  const entries = await redis.xrange(stream, '-', '+');
  return entries.map(([, fields]) =>
    Object.fromEntries(Array.from({ length: fields.length / 2 }, (_, i) => [fields[2 * i]!, fields[2 * i + 1]!])),
  );
}

/** Sends `count` payment.result notifications, 20 at a time; answers the event ids the receiver acknowledged (200). */
async function notifyMany(count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i += 20) {
    await Promise.all(
      Array.from({ length: Math.min(20, count - i) }, async () => {
        const n = platform.signed('payment.result', { body: sampleBody('payment.result') });
        await platform.send(f!.receiver.app, n).expect(200);
        ids.push(eventIdFor('payment.result', 'production', n.body));
      }),
    );
  }
  return ids;
}

function countBy(ids: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  return counts;
}

/** Three targets, one per broker, with fresh names; `extra` applies to each. */
async function brokerTargets(extra: Record<string, unknown> = {}) {
  run += 1;
  const amqp = await amqpConsumer(`amqp-${run}`);
  const stream = await natsStream(`EVENTS${run}`);
  const redisStream = `events-${run}`;
  const targets = [
    {
      name: 'ledger-bus',
      destination: { type: 'amqp', url: rabbit.url, exchange: amqp.exchange, routingKey: 'platform.{type}' },
      secret: SECRET,
      ...extra,
    },
    {
      name: 'risk-stream',
      destination: { type: 'nats', servers: [nats.url], subject: stream.subject },
      secret: SECRET,
      ...extra,
    },
    {
      name: 'audit-stream',
      destination: { type: 'redis-stream', url: streams.url, stream: redisStream, maxLen: 100000 },
      secret: SECRET,
      ...extra,
    },
  ];
  return { amqp, stream, redisStream, targets };
}

describe('broker destinations', () => {
  it(`when ${EVENTS} notifications are acknowledged, then RabbitMQ and the JetStream stream get each exactly once and the Redis stream at least once, with the Standard Webhooks attributes`, async () => {
    const { amqp, stream, redisStream, targets } = await brokerTargets({ concurrency: 10 });
    f = buildForwarding(platform, targets);

    const acknowledged = await notifyMany(EVENTS);
    await waitUntil(
      async () =>
        amqp.received.length >= EVENTS &&
        (await jsm.streams.info(`EVENTS${run}`)).state.messages >= EVENTS &&
        (await redis.xlen(redisStream)) >= EVENTS,
      30000,
      'every broker has every event',
    );
    await new Promise((r) => setTimeout(r, 300)); // nothing late arrives twice

    const amqpCounts = countBy(amqp.received.map((m) => m.properties.messageId as string));
    const { ids: natsIds, first } = await stream.stored();
    const entries = await streamEntries(redisStream);
    for (const id of acknowledged) {
      expect(amqpCounts.get(id)).toBe(1);
      expect(countBy(natsIds).get(id)).toBe(1);
      expect(countBy(entries.map((e) => e.id!)).get(id)).toBeGreaterThanOrEqual(1);
    }
    expect(amqp.received).toHaveLength(EVENTS);
    expect(natsIds).toHaveLength(EVENTS);

    // AMQP: properties and headers; the signature verifies over the body as sent.
    const wh = new Webhook(SECRET);
    const m = amqp.received[0]!;
    const id = m.properties.messageId as string;
    expect(m.properties).toMatchObject({ type: 'payment.result', contentType: 'application/json', deliveryMode: 2 });
    expect(m.fields.routingKey).toBe('platform.payment.result');
    expect(m.properties.headers).toMatchObject({ 'webhook-id': id, 'x-webhook-environment': 'production' });
    expect(m.properties.timestamp).toBe(Number(m.properties.headers!['webhook-timestamp']));
    const body = m.content.toString();
    expect(
      wh.verify(body, {
        'webhook-id': id,
        'webhook-timestamp': String(m.properties.headers!['webhook-timestamp']),
        'webhook-signature': String(m.properties.headers!['webhook-signature']),
      }),
    ).toMatchObject({ id, type: 'payment.result' });

    // NATS: the same headers, plus Nats-Msg-Id; {type} filled into the subject.
    expect(first!.subject).toBe(`EVENTS${run}.payment.result`);
    expect(first!.headers).toMatchObject({
      'Nats-Msg-Id': first!.headers['webhook-id'],
      'x-webhook-environment': 'production',
      'content-type': 'application/json',
    });
    expect(wh.verify(first!.body, first!.headers)).toMatchObject({ type: 'payment.result' });

    // Redis stream: id, type, timestamp, body, signature (and the headers as JSON).
    const e = entries[0]!;
    expect(e).toMatchObject({ type: 'payment.result' });
    expect(JSON.parse(e.headers!)).toMatchObject({ 'webhook-id': e.id, 'x-webhook-environment': 'production' });
    expect(
      wh.verify(e.body!, { 'webhook-id': e.id!, 'webhook-timestamp': e.timestamp!, 'webhook-signature': e.signature! }),
    ).toMatchObject({ id: e.id });

    // The delivery's return value says what the broker confirmed.
    const job = await f.pipeline.deliveryQueue('risk-stream')!.getJob(id);
    expect((job!.returnvalue as DeliveryResult).confirmed).toMatch(new RegExp(`^stream EVENTS${run} seq \\d+$`));
    await Promise.all([amqp.close(), stream.close()]);
  });

  it('when each broker is frozen for 10 s mid-run, then nothing acknowledged is missing and the JetStream stream holds each event once though some were published twice', async () => {
    const { amqp, stream, redisStream, targets } = await brokerTargets({
      timeoutMs: 1000,
      maxAttempts: 100,
      backoff: { initialMs: 200, maxMs: 1000 },
    });
    f = buildForwarding(platform, targets);

    const before = await notifyMany(EVENTS / 2);
    await waitUntil(() => amqp.received.length >= 20, 10000, 'the first deliveries');
    rabbit.pause();
    nats.pause();
    streams.pause();
    let during: string[];
    try {
      during = await notifyMany(EVENTS / 2); // acknowledged by the receiver while every broker is frozen
      await new Promise((r) => setTimeout(r, 10000));
    } finally {
      rabbit.resume();
      nats.resume();
      streams.resume();
    }
    const acknowledged = [...before, ...during];
    const has = (counts: Map<string, number>) => acknowledged.every((id) => (counts.get(id) ?? 0) >= 1);
    await waitUntil(
      async () =>
        has(countBy(amqp.received.map((m) => m.properties.messageId as string))) &&
        has(countBy((await stream.stored()).ids)) &&
        has(countBy((await streamEntries(redisStream)).map((e) => e.id!))),
      40000,
      'every acknowledged event at every broker',
    );

    const stored = countBy((await stream.stored()).ids);
    expect([...stored.values()].every((n) => n === 1)).toBe(true);
    expect(stored.size).toBe(EVENTS);
    // Some publishes reached the stream twice (a retry after a lost acknowledgement); JetStream kept one.
    const published = countBy(stream.published);
    expect([...published.values()].some((n) => n > 1)).toBe(true);
    // Each broker's outage was seen as such: its deliveries timed out and were retried.
    for (const target of ['ledger-bus', 'risk-stream', 'audit-stream']) {
      expect(
        f.logs.find(
          (l) =>
            l.message === 'delivery attempt failed; will retry' && l.target === target && l.errorClass === 'timeout',
        ),
      ).toBeDefined();
    }
    await Promise.all([amqp.close(), stream.close()]);
  }, 90000);

  it('when no queue is bound for the routing key or no stream captures the subject, then the delivery is retried and dead-lettered with that reason; a replay after binding a queue delivers it', async () => {
    const ch = await mq.createChannel();
    await ch.assertExchange('unbound', 'topic', { durable: false });
    f = buildForwarding(platform, [
      {
        name: 'unrouted',
        destination: { type: 'amqp', url: rabbit.url, exchange: 'unbound', routingKey: 'platform.{type}' },
        maxAttempts: 2,
      },
      {
        name: 'streamless',
        destination: { type: 'nats', servers: [nats.url], subject: 'nostream.{type}' },
        maxAttempts: 2,
      },
      {
        name: 'no-exchange',
        destination: { type: 'amqp', url: rabbit.url, exchange: 'missing-exchange' },
        maxAttempts: 2,
      },
      {
        name: 'wrong-password',
        destination: { type: 'amqp', url: rabbit.url.replace('guest:guest', 'guest:sekret-pw'), exchange: 'unbound' },
        maxAttempts: 2,
      },
    ]);
    const [eventId] = await notifyMany(1);
    const letters = async () => new Map((await f!.deadLetters.list()).map((d) => [d.target, d]));
    await waitUntil(async () => (await letters()).size === 4, 20000, 'four dead letters');
    const dead = await letters();

    expect(dead.get('unrouted')!.lastFailure).toMatchObject({ errorClass: 'unroutable', attempt: 2 });
    expect(dead.get('unrouted')!.lastFailure!.error).toMatch(
      /^unroutable: RabbitMQ returned the message \(312 NO_ROUTE\): no queue is bound to exchange "unbound" with routing key "platform.payment.result" after \d+ ms$/,
    );
    expect(dead.get('streamless')!.lastFailure).toMatchObject({ errorClass: 'no_stream', attempt: 2 });
    expect(dead.get('streamless')!.lastFailure!.error).toMatch(
      /^no stream: no JetStream stream captures subject "nostream.payment.result"/,
    );
    expect(dead.get('no-exchange')!.lastFailure!.error).toMatch(/NOT_FOUND - no exchange 'missing-exchange'/);
    expect(dead.get('wrong-password')!.lastFailure!.error).toMatch(/cannot connect to RabbitMQ: .*ACCESS.REFUSED/);
    // Credentials are nowhere: not in the failure, the masked headers or the log lines.
    expect(JSON.stringify([...dead.values()])).not.toContain('sekret-pw');
    expect(f.logs.raw.join('\n')).not.toContain('sekret-pw');
    expect(
      f.logs.find(
        (l) => l.message === 'delivery dead-lettered' && l.target === 'unrouted' && /unroutable/.test(String(l.error)),
      ),
    ).toBeDefined();

    // The operator binds a queue and replays: the same event, delivered once.
    await ch.assertQueue('late-queue', { durable: false });
    await ch.bindQueue('late-queue', 'unbound', 'platform.#');
    await f.deadLetters.replay([`unrouted/${eventId}`]);
    await waitUntil(
      async () => (await ch.checkQueue('late-queue')).messageCount === 1,
      10000,
      'replayed into the bound queue',
    );
    const got = await ch.get('late-queue', { noAck: true });
    expect(got && got.properties.messageId).toBe(eventId);
    await ch.close();
  });

  it('config check connects to each destination, says whether it is reachable and whether a stream captures the NATS subject, and masks credentials', async () => {
    await jsm.streams.add({ name: 'CHECKED', subjects: ['checked.>'] });
    const closedPort = await freePort();
    const file = path.join(tempDir('check'), 'config.yaml');
    writeFileSync(
      file,
      stringify({
        targets: [
          { name: 'bus', events: ['*'], destination: { type: 'amqp', url: rabbit.url, exchange: 'amq.topic' } },
          {
            name: 'bus-down',
            events: ['*'],
            destination: { type: 'amqp', url: `amqp://guest:sekret-pw@127.0.0.1:${closedPort}`, exchange: 'x' },
          },
          {
            name: 'risk',
            events: ['payment.result'],
            destination: { type: 'nats', servers: [nats.url], subject: 'checked.{type}' },
          },
          {
            name: 'risk-nostream',
            events: ['payment.result'],
            destination: {
              type: 'nats',
              servers: [nats.url.replace('nats://', 'nats://tok-sekret@')],
              subject: 'unchecked.{type}',
            },
          },
          { name: 'audit', events: ['*'], destination: { type: 'redis-stream', url: streams.url, stream: 'audit' } },
        ],
      }),
    );
    const out: string[] = [];
    const code = await runCli(['config', 'check'], {
      env: { PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64, CONFIG_FILE: file, REDIS_URL: testRedisUrl() },
      out: (l) => out.push(l),
      err: (l) => out.push(l),
    });
    const text = out.join('\n');

    expect(code).toBe(0);
    expect(text).toContain('  - bus (amqp): reachable; exchange "amq.topic" exists');
    expect(text).toMatch(/ {2}- bus-down \(amqp\): not reachable: .*ECONNREFUSED/);
    expect(text).toContain('  - risk (nats): reachable; stream "CHECKED" captures "checked.payment.result"');
    expect(text).toContain('  - risk-nostream (nats): reachable, but no stream captures "unchecked.payment.result"');
    expect(text).toContain('  - audit (redis-stream): reachable');
    expect(text).toContain('target risk-nostream: its nats destination is reachable, but no stream captures');
    expect(text).toContain(`amqp://guest:***@127.0.0.1:${closedPort}`);
    expect(text).not.toContain('sekret');
  });
});

describe('a broker target in the configuration', () => {
  const problems = (t: Record<string, unknown>) => {
    const r = targetSchema.safeParse({ name: 'bus', events: ['*'], ...t });
    return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  };
  it('takes exactly one of url and destination, and says what is wrong with a destination', () => {
    expect(problems({ destination: { type: 'amqp', url: 'amqp://mq.internal', exchange: 'platform.events' } })).toEqual(
      [],
    );
    expect(problems({})).toEqual([
      ': target "bus": give exactly one of url (an HTTP endpoint) and destination (a message broker or database: { type: amqp | nats | redis-stream | postgres, … })',
    ]);
    expect(
      problems({
        url: 'https://x.example/h',
        destination: { type: 'nats', servers: ['nats://n:4222'], subject: 'a.{type}' },
      }),
    ).toEqual([expect.stringMatching(/^destination: target "bus": give exactly one of url/)]);
    expect(problems({ destination: { type: 'kafka', url: 'kafka://k' } })).toEqual([
      'destination.type: unknown destination type "kafka": amqp, nats, redis-stream or postgres',
    ]);
    expect(problems({ destination: { type: 'nats', servers: ['http://n:4222'], subject: 'a.{event}' } })).toEqual([
      'destination.servers.0: must be nats://host:port or tls://host:port',
      'destination.subject: unknown placeholder {event}: the only one is {type}, the event type',
    ]);
    expect(problems({ destination: { type: 'redis-stream', url: 'redis://r', stream: 's', maxlen: 5 } })).toEqual([
      expect.stringMatching(/maxlen/),
    ]);
  });
});
