import { Redis } from 'ioredis';
import request from 'supertest';
import { ADMIN_TEST_TOKEN } from './support/forwarding-harness';
import { consoleWorld, OPERATOR, type ConsoleWorld } from './support/console-event';
import { FakePlatform } from './support/platform';

// One payment.result delivered to ledger and dead-lettered at erp (consoleWorld); then its delivery
// jobs are damaged straight in Redis, as no current receiver writes them: data that is not JSON.
const platform = new FakePlatform();
let w: ConsoleWorld;
let redis: Redis;

beforeAll(async () => {
  w = await consoleWorld(platform);
  redis = new Redis(w.f.config.redisUrl);
}, 30000);
afterAll(async () => {
  redis?.disconnect();
  await w?.close();
});

const api = (path: string) => request(w.f.admin).get(path).set('authorization', `Bearer ${ADMIN_TEST_TOKEN}`);
const page = (path: string) => request(w.f.admin).get(path).auth(OPERATOR.username, OPERATOR.password);
const damage = (target: string) =>
  redis.hset(w.f.pipeline.deliveryQueue(target)!.toKey(w.eventId), 'data', '{not json');
const NOT_JSON = /^its stored job is not JSON: /;

describe('an event whose delivery job to one target is unreadable', () => {
  beforeAll(() => damage('erp'));

  it('the admin API answers 200 with what it can read, the damaged delivery marked unreadable with why, and a warn line names it', async () => {
    const res = await api(`/admin/api/events/${w.eventId}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ eventId: w.eventId, eventType: 'payment.result', environment: 'production' });
    const byTarget = Object.fromEntries((res.body.deliveries as { target: string }[]).map((d) => [d.target, d]));
    expect(byTarget.ledger).toMatchObject({ state: 'completed', attemptsMade: 1 });
    expect(byTarget.erp).toEqual({
      target: 'erp',
      state: 'unreadable',
      unreadable: expect.stringMatching(NOT_JSON),
      attemptsMade: 0,
      totalAttempts: 0,
      failedAttempts: [],
      attempts: [],
      series: [],
    });
    expect(w.f.receiver.logs.lines.find((l) => l.level === 'warn' && l.jobId === w.eventId)).toMatchObject({
      message: 'job unreadable',
      queue: expect.stringContaining('erp'),
      reason: expect.stringMatching(NOT_JSON),
    });
  });

  it('the console event page shows the readable delivery and says why the other cannot be shown', async () => {
    const res = await page(`/admin/console/events/${w.eventId}`);
    expect(res.status).toBe(200);
    expect(res.text).toMatch(/<section class="delivery" data-target="ledger"[\s\S]*data-trigger="received"/);
    expect(res.text).toMatch(
      /<section class="delivery" data-target="erp"[\s\S]*unreadable[\s\S]*its stored job is not JSON: /,
    );
  });

  it('the console search by its id lists the readable delivery', async () => {
    const res = await page(`/admin/console/events?q=${w.eventId}`);
    expect(res.status).toBe(200);
    expect(res.text).toMatch(
      /<td data-label="Target">ledger<\/td>\s*<td data-label="State"><span class="badge s-delivered">delivered<\/span>/,
    );
  });
});

describe('an event whose every job is unreadable', () => {
  let other: string;

  beforeAll(async () => {
    await damage('ledger');
    await platform
      .send(
        w.f.receiver.app,
        platform.signed('payment.result', {
          body: JSON.stringify({ type: 'MERCH', data: { request_id: 'PAY-OTHER', status: 'SUCCESS' } }),
        }),
      )
      .expect(200);
    await w.ledger.waitFor(() => w.ledger.successes().length === 2);
    other = String(w.ledger.requests.at(-1)!.headers['webhook-id']);
  });

  it('the admin API refuses with 409 unreadable_job naming each job and why', async () => {
    const res = await api(`/admin/api/events/${w.eventId}`);
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      error: 'unreadable_job',
      message: expect.stringContaining(w.eventId),
      unreadable: expect.arrayContaining([
        { queue: expect.stringContaining('ledger'), id: w.eventId, reason: expect.stringMatching(NOT_JSON) },
        { queue: expect.stringContaining('erp'), id: w.eventId, reason: expect.stringMatching(NOT_JSON) },
      ]),
    });
  });

  it('the console event page and the search by its id refuse with the reason', async () => {
    for (const path of [`/admin/console/events/${w.eventId}`, `/admin/console/events?q=${w.eventId}`]) {
      const res = await page(path);
      expect([path, res.status]).toEqual([path, 409]);
      expect(res.text).toMatch(/its stored job is not JSON: /);
    }
  });

  it('another event is unaffected', async () => {
    const res = await api(`/admin/api/events/${other}`);
    expect(res.status).toBe(200);
    expect(res.body.deliveries.map((d: { target: string }) => d.target).sort()).toEqual(['erp', 'ledger']);
    await page(`/admin/console/events/${other}`).expect(200);
  });
});
