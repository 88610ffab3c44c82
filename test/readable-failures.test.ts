import request from 'supertest';
import { createLogger } from '../src/logging/logger';
import { ADMIN_TEST_TOKEN, buildForwarding, waitUntil, type ForwardingHarness } from './support/forwarding-harness';
import { LogCapture } from './support/harness';
import { FakePlatform } from './support/platform';
import { freePort } from './support/redis-server';
import { TargetServer } from './support/target-server';

const platform = new FakePlatform();
const bearer = { authorization: `Bearer ${ADMIN_TEST_TOKEN}` };
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
/** A stack trace's frame lines, or the class name a thrown error's stack starts with. */
const STACK = /\n\s+at |TransientDeliveryError|PermanentDeliveryError/;

let f: ForwardingHarness;
let crm: TargetServer;
let eventId: string;

beforeAll(async () => {
  crm = await TargetServer.start(() => ({ status: 503, body: 'database is down' }));
  const closedPort = await freePort();
  f = buildForwarding(platform, [
    {
      name: 'crm',
      url: crm.url,
      maxAttempts: 2,
      secret: SECRET,
      headers: { authorization: 'Bearer internal-token-123' },
    },
    { name: 'gone', url: `http://127.0.0.1:${closedPort}/hooks`, maxAttempts: 1 },
  ]);
  await platform.send(f.receiver.app, platform.signed('payment.result')).expect(200);
  await waitUntil(async () => (await f.deadLetters.list()).length === 2, 10000, 'both dead-lettered');
  eventId = String(crm.requests[0]!.headers['webhook-id']);
});
afterAll(async () => {
  await f.close();
  await crm.close();
});

describe('a delivery that failed with HTTP 503', () => {
  it('the admin API shows each attempt as data: when, target, masked headers, status, error class, latency, excerpt; no stack trace', async () => {
    const res = await request(f.admin).get(`/admin/api/events/${eventId}`).set(bearer).expect(200);
    const delivery = res.body.deliveries.find((d: { target: string }) => d.target === 'crm');

    expect(delivery.attempts).toHaveLength(2);
    for (const [i, attempt] of delivery.attempts.entries()) {
      expect(attempt).toMatchObject({
        outcome: 'failed',
        attempt: i + 1,
        target: 'crm',
        errorClass: 'http_status',
        status: 503,
        latencyMs: expect.any(Number),
        responseExcerpt: 'database is down',
        error: expect.stringMatching(/^HTTP 503 after \d+ ms: database is down$/),
        requestHeaders: {
          'webhook-id': eventId,
          authorization: 'Bearer ***',
          'webhook-signature': '***',
          'content-type': 'application/json',
        },
      });
      expect(Date.parse(attempt.at)).not.toBeNaN();
    }
    expect(delivery.failedReason).toMatch(/^HTTP 503 after \d+ ms: database is down$/);
    expect(JSON.stringify(res.body)).not.toMatch(STACK);
    expect(JSON.stringify(res.body)).not.toContain('internal-token-123');
  });

  it("the dashboard's JSON API shows the readable reason and an empty stack trace", async () => {
    const res = await request(f.admin)
      .get('/admin/queues/api/queues?activeQueue=deliver.crm&status=failed&page=1')
      .set(bearer)
      .expect(200);
    const queue = res.body.queues.find((q: { name: string }) => q.name === 'deliver.crm');
    expect(queue.jobs).toHaveLength(1);
    expect(queue.jobs[0].failedReason).toMatch(/^HTTP 503 after \d+ ms: database is down$/);
    expect(queue.jobs[0].stacktrace).toEqual([]);
    expect(JSON.stringify(queue.jobs[0])).not.toMatch(STACK);
  });

  it('the job log holds every attempt, the dead letter its last one', async () => {
    const { logs } = await f.pipeline.deliveryQueue('crm')!.getJobLogs(eventId);
    expect(logs.map((l) => JSON.parse(l))).toMatchObject([
      { attempt: 1, status: 503 },
      { attempt: 2, status: 503 },
    ]);
    const [dead] = await f.deadLetters.list({ target: 'crm' });
    expect(dead!.lastFailure).toMatchObject({
      errorClass: 'http_status',
      status: 503,
      responseExcerpt: 'database is down',
    });
  });
});

it('a target that refuses connections is classed connection_refused, with its code', async () => {
  const [dead] = await f.deadLetters.list({ target: 'gone' });
  expect(dead!.lastFailure).toMatchObject({
    errorClass: 'connection_refused',
    error: expect.stringMatching(/^connection refused \(ECONNREFUSED\) after \d+ ms$/),
  });
  expect(dead!.reason).toBe(dead!.lastFailure!.error);
});

describe('repeated identical errors', () => {
  it('are logged at the first occurrence, then once per interval with a count', async () => {
    const capture = new LogCapture();
    const logger = createLogger('info', capture.stream, { repeatIntervalMs: 300 });
    for (let i = 0; i < 50; i++)
      logger.repeated('warn', 'redis:ECONNREFUSED', 'redis connection error', { error: 'connect ECONNREFUSED', i });
    logger.repeated('warn', 'redis:other', 'redis connection error', { error: 'Connection is closed.' });
    await new Promise((r) => setTimeout(r, 450));
    for (let i = 0; i < 3; i++)
      logger.repeated('warn', 'redis:ECONNREFUSED', 'redis connection error', { error: 'connect ECONNREFUSED' });
    logger.repeated.flush();
    await new Promise((r) => setImmediate(r));

    expect(capture.lines.map((l) => [l.message, l.error, l.repeated])).toEqual([
      ['redis connection error', 'connect ECONNREFUSED', undefined],
      ['redis connection error', 'Connection is closed.', undefined],
      ['redis connection error (repeated)', 'connect ECONNREFUSED', 49],
      ['redis connection error (repeated)', 'connect ECONNREFUSED', 3],
    ]);
  });
});
