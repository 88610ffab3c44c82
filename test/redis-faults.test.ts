import { SUCCESS } from '../src/http/envelope';
import type { EventType } from '../src/model/event-table';
import { buildHarness, type Harness } from './support/harness';
import { FakePlatform } from './support/platform';
import { RedisServer } from './support/redis-server';

const platform = new FakePlatform();
const ENQUEUE_TIMEOUT_MS = 800;
let redis: RedisServer;
let h: Harness;

beforeAll(async () => {
  redis = await RedisServer.start();
});
afterAll(() => redis.stop());
beforeEach(() => {
  h = buildHarness({
    PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
    REDIS_URL: redis.url,
    ENQUEUE_TIMEOUT_MS: String(ENQUEUE_TIMEOUT_MS),
  });
});
afterEach(async () => {
  redis.resume();
  await h.close();
});

async function waitFor200(deadlineMs: number): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const res = await platform.send(h.app, platform.signed('payment.result'));
    if (res.status === 200) return;
    if (Date.now() > deadline) throw new Error(`still ${res.status} after ${deadlineMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function jobCount(queue: EventType): Promise<number> {
  return h.pipeline.eventQueue(queue).count();
}

describe('when Redis is down', () => {
  it('then it answers 503 within the bound, and 200 again once Redis is back', async () => {
    await platform.send(h.app, platform.signed('payment.result')).expect(200);
    await redis.stop();

    const started = Date.now();
    const res = await platform.send(h.app, platform.signed('payment.result'));
    const took = Date.now() - started;

    expect(res.status).toBe(503);
    expect(res.body).toEqual({ ret_code: '503000', ret_msg: expect.stringMatching(/not stored/) });
    expect(took).toBeLessThan(ENQUEUE_TIMEOUT_MS + 1000); // the bound plus scheduling slack on a loaded machine;
    expect(h.logs.find((l) => l.outcome === 'unavailable' && l.level === 'error')).toBeDefined();

    await redis.start();
    await waitFor200(10_000);
  });

  it("then the refused notification is delivered on the platform's next attempt", async () => {
    await platform.send(h.app, platform.signed('fx.result')).expect(200); // connection is up
    const n = platform.signed('payment.result');
    await redis.stop();
    await platform.send(h.app, n).expect(503);
    await redis.start();
    await waitFor200(10_000);
    const before = await jobCount('payment.result');

    const retry = await platform.send(h.app, n); // the same request, same nonce

    expect(retry.status).toBe(200);
    expect(await jobCount('payment.result')).toBe(before + 1);
    const jobs = await h.pipeline.eventQueue('payment.result').getJobs(['waiting']);
    expect(jobs.some((j) => j.data.nonce === n.headers['x-svc-nonce'])).toBe(true);
  });
});

describe('when Redis stalls', () => {
  it('then it answers 503 after the enqueue timeout, and the retry is acknowledged without a second job', async () => {
    await platform.send(h.app, platform.signed('fx.result')).expect(200);
    const n = platform.signed('settlement.result');
    redis.pause();

    const started = Date.now();
    const res = await platform.send(h.app, n);
    const took = Date.now() - started;
    redis.resume();

    expect(res.status).toBe(503);
    expect(took).toBeGreaterThanOrEqual(ENQUEUE_TIMEOUT_MS - 50);
    expect(took).toBeLessThan(ENQUEUE_TIMEOUT_MS + 1000); // the bound plus scheduling slack on a loaded machine;

    const retry = await platform.send(h.app, n);
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual(SUCCESS);
    expect(await jobCount('settlement.result')).toBe(1);
  });
});
