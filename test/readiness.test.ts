import request from 'supertest';
import { wireAdmin } from '../src/admin/wiring';
import { createLogger } from '../src/logging/logger';
import { buildHarness, type Harness } from './support/harness';
import { FakePlatform } from './support/platform';
import { RedisServer } from './support/redis-server';

const platform = new FakePlatform();
let redis: RedisServer;
let h: Harness;
let admin: ReturnType<typeof wireAdmin>;

beforeAll(async () => {
  redis = await RedisServer.start();
  h = buildHarness({
    PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
    REDIS_URL: redis.url,
    ADMIN_TOKEN: 'readiness-token-0123456789',
  });
  admin = wireAdmin(h.config, h.pipeline, h.metrics.registry, createLogger('error'));
});
afterAll(async () => {
  await h.close();
  await redis.stop();
});

async function waitForStatus(status: number, timeoutMs: number): Promise<request.Response> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await request(admin).get('/readyz');
    if (res.status === status || Date.now() > deadline) return res;
    await new Promise((r) => setTimeout(r, 100));
  }
}

it('when Redis stops, /readyz turns 503, and when it returns, 200 again; /healthz stays 200', async () => {
  expect((await waitForStatus(200, 5000)).status).toBe(200);

  await redis.stop();
  const down = await waitForStatus(503, 5000);
  expect(down.status).toBe(503);
  expect(down.body).toEqual({ status: 'not_ready', redis: 'down' }); // no raw error text (addresses, host names)
  await request(admin).get('/healthz').expect(200);

  await redis.start();
  const up = await waitForStatus(200, 10000);
  expect(up.status).toBe(200);
  expect(up.body).toEqual({ status: 'ready', redis: 'up', durabilityRisks: ['no_persistence'] });
});
