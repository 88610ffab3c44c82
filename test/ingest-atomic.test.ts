import { Worker, type Job, type JobsOptions, type Queue } from 'bullmq';
import type { EventType } from '../src/model/event-table';
import { targetSchema } from '../src/model/target-schema';
import { deliveryJobOptions } from '../src/model/job-options';
import { ownKeys } from '../src/model/names';
import { openQueue } from '../src/pipeline/queues';
import { Redis } from 'ioredis';
import { sampleBody } from '../src/signing/samples';
import { signLegacy } from '../src/signing/sign';
import type { DeliveryJob, EventJob } from '../src/model/jobs';
import { buildHarness, type Harness } from './support/harness';
import { createExpectationStore } from '../src/reconciliation/store';
import { waitUntil } from './support/forwarding-harness';
import { counterValue } from './support/metric-value';
import { FakePlatform } from './support/platform';
import { RedisServer } from './support/redis-server';

const platform = new FakePlatform();
const MERCHANT_ID = 'M-ATOMIC-1';
const PAY_PATH = '/api/v2/merch/pay/notify';

function legacyNotification() {
  const timestamp = Date.now();
  const body = Buffer.from(sampleBody('payment.result', { timestamp }));
  return {
    target: PAY_PATH,
    body,
    headers: {
      'content-type': 'application/json',
      ...signLegacy(platform.keys.privateKeyPem, MERCHANT_ID, timestamp, body),
    },
  };
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
  ])(
    'when a %s-scheme notification is accepted and no expectation waits for it, then the receiver sent exactly one EVALSHA',
    async (_scheme, make) => {
      const sent = await sentDuring(() => platform.send(h.app, make()).expect(200));
      expect(sent).toEqual(['evalsha']);
    },
  );

  it('when an expectation waits for the notification, then the ingest script says so and one more EVALSHA meets it', async () => {
    const store = createExpectationStore(h.pipeline.redis, h.pipeline.prefix);
    const { expectation } = await store.create(
      {
        eventType: 'payment.result',
        environment: 'production',
        requestId: 'ATOMIC-EXPECTED-1',
        dueByMs: Date.now() + 60_000,
        createdBy: 'test',
      },
      10,
      Date.now(),
    );
    // Loads the expectation's script into Redis, so the call measured is the cached one.
    await store.arrived('production', 'payment.result', 'ATOMIC-WARM-1', 'evt_warm', Date.now());
    const body = '{"type":"MERCH","data":{"request_id":"ATOMIC-EXPECTED-1","status":"SUCCESS"}}';
    const sent = await sentDuring(async () => {
      await platform.send(h.app, platform.signed('payment.result', { body })).expect(200);
      await waitUntil(async () => (await store.get(expectation.id))?.state === 'met', 5000, 'met');
    });
    // The acknowledgement's EVALSHA, then the expectation's own script (EVALSHA too); the HGETALLs are the test's.
    expect(sent.filter((c) => c !== 'hgetall')).toEqual(['evalsha', 'evalsha']);
    const ran = commands.filter((c) => c.source === 'lua').map((c) => c.args[0]!.toLowerCase());
    expect(ran).toContain('hexists');
  });

  it('when a notification is accepted, then its script runs no command for counting copies; its duplicate counts itself', async () => {
    const body = sampleBody('payment.result');
    /** The commands the script ran while `act` ran. */
    const ranByScript = async (act: () => Promise<unknown>) => {
      await sentDuring(act);
      return commands.filter((c) => c.source === 'lua').map((c) => c.args.map((a) => a.toLowerCase()));
    };
    const first = await ranByScript(() =>
      platform.send(h.app, platform.signed('payment.result', { body })).expect(200),
    );
    expect(first.length).toBeGreaterThan(0);
    expect(first.filter(([name]) => name === 'time' || name === 'pttl' || name === 'hincrby')).toEqual([]);
    expect(first.filter((args) => args.some((a) => a.includes(':c:evt_')))).toEqual([]);

    const duplicate = await ranByScript(() =>
      platform.send(h.app, platform.signed('payment.result', { body })).expect(200),
    );
    expect(duplicate.filter(([name, key]) => name === 'hincrby' && key!.includes(':c:evt_'))).toHaveLength(1);
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
  ])(
    "when the add fails inside the script (%s scheme), then no binding is left and the platform's retry is accepted",
    async (_scheme, make) => {
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
      expect(await counterValue(h.metrics.notifications, { event_type: 'payment.result', outcome: 'accepted' })).toBe(
        1,
      );
      expect(await replayKeys()).toHaveLength(1);
    },
  );

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

describe('the jobs the ingest script writes', () => {
  let h: Harness;
  beforeAll(() => {
    // One target for payment.result; no target takes settlement.result.
    h = buildHarness(ENV, Date.now, (c) => ({
      ...c,
      targets: [targetSchema.parse({ name: 'erp', url: 'http://127.0.0.1:9/hook', events: ['payment.result'] })],
    }));
  });
  afterAll(() => h.close());

  /** Our job's hash equals the one queue.add writes for the same job, in a twin queue under another prefix. */
  async function expectSameAsQueueAdd(queue: Queue, job: Job, opts: JobsOptions): Promise<void> {
    const twinPrefix = `${h.config.queuePrefix}twin`;
    const twin = openQueue(h.redis, twinPrefix, queue.name, queue.defaultJobOptions);
    await twin.add(job.name as EventType, job.data, { ...opts, jobId: job.id! });
    const ours = await h.redis.hgetall(`${h.pipeline.prefix}:${queue.name}:${job.id}`);
    const theirs = await h.redis.hgetall(`${twinPrefix}:${queue.name}:${job.id}`);
    const { timestamp: _a, ...oursRest } = ours;
    const { timestamp: _b, ...theirsRest } = theirs;
    expect(oursRest).toEqual(theirsRest);
    await twin.obliterate({ force: true });
    await twin.close();
  }

  it('gives a routed event its delivery job, the job queue.add writes byte for byte but for its timestamp, and no event job', async () => {
    await platform.send(h.app, platform.signed('payment.result')).expect(200);
    const queue = h.pipeline.deliveryQueue('erp')!;
    const [job] = (await queue.getJobs(['waiting'])) as Job<DeliveryJob>[];
    expect(job!.id).toBe(job!.data.eventId);
    expect(await h.pipeline.eventQueue('payment.result').count()).toBe(0);
    expect(await h.redis.exists(ownKeys.dedup(h.pipeline.prefix, job!.data.eventId))).toBe(1);
    await expectSameAsQueueAdd(
      queue,
      job!,
      deliveryJobOptions(job!.data.eventId, h.pipeline.targets()[0]!, h.config.retention),
    );
  });

  it('keeps an unrouted event as its event job, the job queue.add writes, which a Worker processes', async () => {
    await platform.send(h.app, platform.signed('settlement.result')).expect(200);
    const queue = h.pipeline.eventQueue('settlement.result');
    const [job] = (await queue.getJobs(['waiting'])) as Job<EventJob>[];
    expect(job!.id).toBe(job!.data.eventId);
    await expectSameAsQueueAdd(queue, job!, {});

    const connection = h.connector.open('worker');
    let worker: Worker<EventJob> | undefined;
    const processed = new Promise<EventJob>((resolve) => {
      worker = new Worker<EventJob>('settlement.result', async (j) => resolve(j.data), {
        connection,
        prefix: h.pipeline.prefix,
      });
    });
    expect(await processed).toEqual(job!.data);
    await worker!.close();
    connection.disconnect();
  });
});

describe('an ingest that fails part-way through its adds', () => {
  let h: Harness;
  beforeAll(() => {
    const targets = ['erp', 'crm'].map((name) =>
      targetSchema.parse({ name, url: 'http://127.0.0.1:9/hook', events: ['payment.result'] }),
    );
    h = buildHarness(ENV, Date.now, (c) => ({ ...c, targets }));
  });
  afterAll(() => h.close());

  it("leaves no record or binding, and the platform's retry gives each target exactly one delivery job", async () => {
    const n = platform.signed('payment.result');
    // The second target's job counter is not a number: its add raises after the first target's add.
    const counterKey = `${h.pipeline.prefix}:deliver.crm:id`;
    await h.redis.set(counterKey, 'not-a-number');

    expect((await platform.send(h.app, n)).status).toBe(503);
    expect(await h.pipeline.deliveryQueue('erp')!.count()).toBe(1);
    expect(await h.pipeline.deliveryQueue('crm')!.count()).toBe(0);
    expect(await h.redis.keys(`${h.pipeline.prefix}:replay:*`)).toEqual([]);
    expect(await h.redis.keys(`${h.pipeline.prefix}:d:*`)).toEqual([]);

    await h.redis.del(counterKey);
    expect((await platform.send(h.app, n)).status).toBe(200);
    expect(await h.pipeline.deliveryQueue('erp')!.count()).toBe(1);
    expect(await h.pipeline.deliveryQueue('crm')!.count()).toBe(1);
    expect(await counterValue(h.metrics.notifications, { event_type: 'payment.result', outcome: 'accepted' })).toBe(1);
  });
});
