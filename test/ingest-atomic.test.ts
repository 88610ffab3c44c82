import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { sampleBody } from '../src/signing/samples';
import { signLegacy } from '../src/signing/sign';
import type { EventJob } from '../src/pipeline/jobs';
import { buildHarness, type Harness } from './support/harness';
import { counterValue } from './support/metric-value';
import { FakePlatform } from './support/platform';
import { RedisServer } from './support/redis-server';

const platform = new FakePlatform();
const MERCHANT_ID = 'M-ATOMIC-1';
const PAY_PATH = '/api/v2/merch/pay/notify';

function legacyNotification() {
  const timestamp = Date.now();
  const body = Buffer.from(sampleBody('payment.result', { timestamp }));
  return { target: PAY_PATH, body, headers: { 'content-type': 'application/json', ...signLegacy(platform.keys.privateKeyPem, MERCHANT_ID, timestamp, body) } };
}

const ENV = { PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64, SIGNATURE_SCHEMES: 'current,legacy', MERCHANT_ID };

describe('one Redis call per notification', () => {
  let redis: RedisServer;
  let h: Harness;
  let client: Redis;
  let monitor: Redis;
  const commands: { source: string; args: string[] }[] = [];

  beforeAll(async () => {
    // A Redis of its own, so MONITOR sees this receiver and nothing else.
    redis = await RedisServer.start();
    h = buildHarness({ ...ENV, REDIS_URL: redis.url });
    await platform.send(h.app, platform.signed('payment.result')).expect(200); // loads the script once
    client = new Redis(redis.url);
    monitor = await client.monitor();
    monitor.on('monitor', (_time: string, args: string[], source: string) => commands.push({ source, args }));
  });
  afterAll(async () => {
    monitor.disconnect();
    client.disconnect();
    await h.close();
    await redis.stop();
  });

  /** The commands clients sent while `act` ran; those a script ran are reported with source `lua`. */
  async function sentDuring(act: () => Promise<unknown>): Promise<string[]> {
    await new Promise((r) => setTimeout(r, 100)); // MONITOR lines trail the replies: let earlier ones in first
    commands.length = 0;
    await act();
    await new Promise((r) => setTimeout(r, 100));
    return commands.filter((c) => c.source !== 'lua').map((c) => c.args[0]!.toLowerCase());
  }

  it.each([
    ['current', () => platform.signed('payment.result')],
    ['legacy', legacyNotification],
  ])('when a %s-scheme notification is accepted, then the receiver sent exactly one EVALSHA', async (_scheme, make) => {
    const sent = await sentDuring(() => platform.send(h.app, make()).expect(200));
    expect(sent).toEqual(['evalsha']);
  });

  it('when a notification is replayed, then that too is one EVALSHA', async () => {
    const n = legacyNotification();
    await platform.send(h.app, n).expect(200);
    const sent = await sentDuring(() => platform.send(h.app, n).expect(200));
    expect(sent).toEqual(['evalsha']);
  });
});

describe('the replay binding and the job are stored together', () => {
  let h: Harness;
  beforeEach(() => {
    h = buildHarness(ENV);
  });
  afterEach(() => h.close());

  const replayKeys = () => h.redis.keys(`${h.pipeline.prefix}:replay:*`);

  it.each([
    ['current', () => platform.signed('payment.result')],
    ['legacy', legacyNotification],
  ])('when the add fails inside the script (%s scheme), then no binding is left and the platform\'s retry is accepted', async (_scheme, make) => {
    const n = make();
    // A job counter that is not a number makes BullMQ's INCR, its first write, raise inside the script.
    const counterKey = `${h.pipeline.prefix}:payment.result:id`;
    await h.redis.set(counterKey, 'not-a-number');

    const refused = await platform.send(h.app, n);

    expect(refused.status).toBe(503);
    expect(await replayKeys()).toEqual([]);
    expect(await h.pipeline.eventQueue('payment.result').count()).toBe(0);

    await h.redis.del(counterKey);
    const retried = await platform.send(h.app, n);

    expect(retried.status).toBe(200);
    expect(await h.pipeline.eventQueue('payment.result').count()).toBe(1);
    expect(await counterValue(h.metrics.notifications, { event_type: 'payment.result', outcome: 'accepted' })).toBe(1);
    expect(await replayKeys()).toHaveLength(1);
  });

  it('when a notification is accepted, then its binding expires after twice the timestamp tolerance', async () => {
    await platform.send(h.app, platform.signed('payment.result')).expect(200);
    const [key] = await replayKeys();
    const ttl = await h.redis.pttl(key!);
    expect(ttl).toBeGreaterThan(2 * h.config.timestampToleranceMs - 5000);
    expect(ttl).toBeLessThanOrEqual(2 * h.config.timestampToleranceMs);
  });

  it('when the same body arrives under a new nonce, then it is a duplicate and the new nonce is bound too', async () => {
    const body = sampleBody('payment.result');
    await platform.send(h.app, platform.signed('payment.result', { body })).expect(200);
    const second = platform.signed('payment.result', { body });
    await platform.send(h.app, second).expect(200);
    await platform.send(h.app, { ...second, headers: { ...second.headers, 'x-merch-id': 'SUB-LATER' } }).expect(200);

    expect(await h.pipeline.eventQueue('payment.result').count()).toBe(1);
    expect(await replayKeys()).toHaveLength(2);
    expect(await counterValue(h.metrics.notifications, { event_type: 'payment.result', outcome: 'duplicate' })).toBe(1);
    expect(await counterValue(h.metrics.notifications, { event_type: 'payment.result', outcome: 'replay' })).toBe(1);
  });
});

describe('the job the ingest script writes', () => {
  let h: Harness;
  beforeAll(() => {
    h = buildHarness(ENV);
  });
  afterAll(() => h.close());

  it('is the job queue.add writes, byte for byte but for its timestamp, found by getDeduplicationJobId and processed by a Worker', async () => {
    const n = platform.signed('payment.result');
    await platform.send(h.app, n).expect(200);
    const queue = h.pipeline.eventQueue('payment.result');
    const [job] = (await queue.getJobs(['waiting'])) as Job<EventJob>[];
    const eventId = job!.data.eventId;
    expect(await queue.getDeduplicationJobId(eventId)).toBe(job!.id);

    // The same job through queue.add, in a twin queue under another prefix with the same defaults.
    const twinPrefix = `${h.config.queuePrefix}twin`;
    const twin = new Queue('payment.result', { connection: h.redis, prefix: twinPrefix, defaultJobOptions: queue.defaultJobOptions });
    await twin.add('payment.result', job!.data, { jobId: job!.id, deduplication: { id: eventId, ttl: h.config.dedupWindowMs } });
    const ours = await h.redis.hgetall(`${h.pipeline.prefix}:payment.result:${job!.id}`);
    const theirs = await h.redis.hgetall(`${twinPrefix}:payment.result:${job!.id}`);
    const { timestamp: _a, ...oursRest } = ours;
    const { timestamp: _b, ...theirsRest } = theirs;
    expect(oursRest).toEqual(theirsRest);
    await twin.obliterate({ force: true });
    await twin.close();

    const connection = h.connector.open('worker');
    let worker: Worker<EventJob> | undefined;
    const processed = new Promise<EventJob>((resolve) => {
      worker = new Worker<EventJob>('payment.result', async (j) => resolve(j.data), { connection, prefix: h.pipeline.prefix });
    });
    expect(await processed).toEqual(job!.data);
    await worker!.close();
    connection.disconnect();
  });
});
