import request from 'supertest';
import { createFailureWindow } from '../src/admin/auth-failures';
import { wireAdmin } from '../src/admin/wiring';
import { createLogger } from '../src/logging/logger';
import { buildHarness, LogCapture, type Harness } from './support/harness';
import { FakePlatform } from './support/platform';

const TOKEN = 'auth-test-token-0123456789';
const PASSWORD = 'correct horse battery';
const platform = new FakePlatform();
let h: Harness;
let admin: ReturnType<typeof wireAdmin>;
const logs = new LogCapture();

beforeAll(() => {
  h = buildHarness({
    PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
    ADMIN_TOKEN: TOKEN,
    ADMIN_USER: 'ops',
    ADMIN_PASSWORD: PASSWORD,
  });
  admin = wireAdmin(h.config, h.pipeline, h.metrics.registry, createLogger('info', logs.stream));
});
afterAll(async () => {
  await h.close();
});

describe('the authentication scheme', () => {
  it('is case-insensitive (RFC 9110): `bearer` and `BASIC` are accepted, and are no failed login', async () => {
    await request(admin).get('/admin/api/queues').set('authorization', `bearer ${TOKEN}`).expect(200);
    await request(admin).get('/admin/api/queues').set('authorization', `BEARER ${TOKEN}`).expect(200);
    await request(admin)
      .get('/admin/api/queues')
      .set('authorization', `BASIC ${Buffer.from(`ops:${PASSWORD}`).toString('base64')}`)
      .expect(200);
    await new Promise((r) => setImmediate(r));
    expect(logs.lines.filter((l) => l.message === 'admin authentication failed')).toEqual([]);
  });
});

describe('failed admin logins', () => {
  it('are logged with the address and the scheme, never the credential, and the 11th within a minute is answered 429 with Retry-After', async () => {
    for (let i = 0; i < 5; i++)
      await request(admin).get('/admin/api/queues').set('authorization', `Bearer wrong-token-${i}`).expect(401);
    for (let i = 0; i < 5; i++) await request(admin).get('/metrics').auth('ops', `wrong-password-${i}`).expect(401);

    const throttled = await request(admin).get('/admin/api/queues').set('authorization', `Bearer ${TOKEN}`);
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers['retry-after'])).toBeGreaterThan(30); // a minute after the first failure
    expect(Number(throttled.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(throttled.body).toMatchObject({ error: 'too_many_failures' });

    const failures = logs.lines.filter((l) => l.message === 'admin authentication failed');
    expect(failures).toHaveLength(10);
    expect(failures[0]).toMatchObject({
      level: 'warn',
      from: expect.stringMatching(/127\.0\.0\.1/),
      scheme: 'bearer',
      path: '/admin/api/queues',
    });
    expect(failures[9]).toMatchObject({ scheme: 'basic', path: '/metrics' });
    expect(logs.find((l) => /refused for a while/.test(String(l.message)))).toBeDefined();
    const text = logs.raw.join('\n');
    expect(text).not.toMatch(/wrong-token|wrong-password|d3JvbmctcGFzc3dvcmQ/);
    expect(text).not.toContain(TOKEN);
  });

  it('leaves the probes open to a throttled address', async () => {
    await request(admin).get('/healthz').expect(200);
  });
});

describe('the failure window', () => {
  it('slides: the address may try again once its oldest failure of the last ten is a minute old', () => {
    let now = 0;
    const w = createFailureWindow({ now: () => now });
    for (let i = 0; i < 10; i++) {
      expect(w.blockedFor('a')).toBe(0);
      w.record('a');
      now += 1000;
    }
    expect(w.blockedFor('a')).toBe(50_000); // first failure at 0, now 10 s
    expect(w.blockedFor('b')).toBe(0);
    now = 60_001;
    expect(w.blockedFor('a')).toBe(0);
    w.record('a');
    expect(w.blockedFor('a')).toBe(999); // second failure (1 s) leaves at 61 s
  });

  it('forgets the least recently failing address first, so a flood of sources stays bounded', () => {
    const w = createFailureWindow({ maxAddresses: 100, max: 2 });
    w.record('victim');
    w.record('victim');
    for (let i = 0; i < 1000; i++) w.record(`10.0.${i >> 8}.${i & 255}`);
    expect(w.size).toBe(100);
    expect(w.blockedFor('victim')).toBe(0);
    expect(w.blockedFor('10.0.3.231')).toBe(0); // one failure of the last address: not blocked
    w.record('10.0.3.231');
    expect(w.blockedFor('10.0.3.231')).toBeGreaterThan(0);
  });
});
