import request from 'supertest';
import { EnqueueUnavailableError } from '../src/pipeline/errors';
import { eventIdFor } from '../src/model/ids';
import type { EventJob } from '../src/model/jobs';
import { toDeliveryJob } from '../src/model/jobs';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../src/receiving/json-depth';
import { ADMIN_TEST_TOKEN, buildForwarding, type ForwardingHarness } from './support/forwarding-harness';
import { FakePlatform } from './support/platform';
import { TargetServer } from './support/target-server';

const platform = new FakePlatform();
let f: ForwardingHarness;
let erp: TargetServer;

/** A signed-looking 10 KB body, its `data` nested `depth` arrays deep. */
const nested = (depth: number) => `{"type":"MERCH","data":${'['.repeat(depth)}${']'.repeat(depth)}}`;

beforeAll(async () => {
  erp = await TargetServer.start();
  f = buildForwarding(platform, [{ name: 'erp', url: erp.url, events: ['payment.result'] }]);
});
afterAll(async () => {
  await f.close();
  await erp.close();
});

const view = (id: string) =>
  request(f.admin).get(`/admin/api/events/${id}`).set('authorization', `Bearer ${ADMIN_TEST_TOKEN}`);

describe('a signed body nested 5,000 arrays deep, for a routed type', () => {
  const body = nested(5000);
  const eventId = eventIdFor('payment.result', 'production', Buffer.from(body));

  it('is quarantined (200, the reason named in the log and the view), never 503, and its event view answers 200', async () => {
    expect(body.length).toBeGreaterThan(10_000);
    const res = await platform.send(f.receiver.app, platform.signed('payment.result', { body }));
    expect(res.status).toBe(200);
    const line = f.receiver.logs.find((l) => l.eventId === eventId);
    expect(line).toMatchObject({
      level: 'error',
      message: 'notification quarantined: verified but not a valid notification',
      outcome: 'quarantined',
      errors: [`body nests deeper than ${MAX_JSON_DEPTH} levels`],
    });
    expect(f.receiver.logs.find((l) => /Redis unavailable/.test(String(l.message)))).toBeUndefined();

    const shown = await view(eventId);
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({
      eventId,
      queue: 'quarantine',
      errors: [`body nests deeper than ${MAX_JSON_DEPTH} levels`],
    });
    expect(shown.body.payload).toBeUndefined();
    expect(erp.requests).toHaveLength(0);
  });

  it('stored as a delivery job before this limit existed, with a malformed attempt log line, still has an event view that answers 200', async () => {
    const old = nested(20_000);
    const oldId = eventIdFor('payment.result', 'production', Buffer.from(old));
    const job = {
      eventId: oldId,
      eventType: 'payment.result',
      receivedAt: new Date().toISOString(),
      path: '/api/v2/payment/notify',
      timestamp: '0',
      nonce: 'n',
      scheme: 'current',
      rawBody: old,
      rawBodyEncoding: 'utf8',
      signatureHeaders: {},
      payload: {},
    } as unknown as EventJob;
    await f.pipeline
      .deliveryQueue('erp')!
      .add('payment.result', toDeliveryJob(job, 'erp'), { jobId: oldId, delay: 3_600_000 });
    // An attempt log line that is not JSON (cut short, or written by hand) beside it.
    await (await f.pipeline.deliveryQueue('erp')!.getJob(oldId))!.log('{"attempt": 1, "error": "cut sh');
    const shown = await view(oldId);
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({
      eventId: oldId,
      state: 'routed',
      deliveries: [{ target: 'erp', state: 'delayed', failedAttempts: [] }],
    });
  });
});

describe('depth at the limit', () => {
  it('a body nested exactly 64 levels is parsed and delivered as usual; brackets inside strings do not count', async () => {
    expect(nestsDeeperThan(nested(MAX_JSON_DEPTH - 1), MAX_JSON_DEPTH)).toBe(false);
    expect(nestsDeeperThan(nested(MAX_JSON_DEPTH), MAX_JSON_DEPTH)).toBe(true); // the outer object is one level
    expect(nestsDeeperThan(`{"a":"${'['.repeat(500)}\\"${'{'.repeat(500)}"}`, MAX_JSON_DEPTH)).toBe(false);
    const body = nested(MAX_JSON_DEPTH - 1);
    expect((await platform.send(f.receiver.app, platform.signed('payment.result', { body }))).status).toBe(200);
    await erp.waitFor(() => erp.successes().length === 1);
  });
});

describe("a failure that is not Redis's", () => {
  it('is not reported as Redis being unavailable: the ingest passes a stack overflow on as itself', async () => {
    let deep: unknown = [];
    for (let i = 0; i < 200_000; i++) deep = [deep];
    const event = {
      eventId: eventIdFor('fx.result', 'production', Buffer.from('deep')),
      eventType: 'fx.result',
      receivedAt: new Date().toISOString(),
      path: '/x',
      timestamp: '0',
      nonce: 'n-deep',
      scheme: 'current',
      rawBody: 'deep',
      rawBodyEncoding: 'utf8',
      signatureHeaders: {},
      payload: { data: deep },
    } as unknown as EventJob;
    const failure = await f.pipeline.enqueueEvent(event, 'n-deep').then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(RangeError);
    expect(failure).not.toBeInstanceOf(EnqueueUnavailableError);
  });
});
