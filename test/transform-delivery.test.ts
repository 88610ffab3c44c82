import request from 'supertest';
import { Webhook } from 'standardwebhooks';
import { EVENT_TYPES } from '../src/model/event-table';
import { ADMIN_TEST_TOKEN, buildForwarding, waitUntil, type ForwardingHarness } from './support/forwarding-harness';
import { counterValue } from './support/metric-value';
import { FakePlatform } from './support/platform';
import { TargetServer } from './support/target-server';

// A target's transform reshapes each event before it is sent, signed over what is sent; null sends
// nothing; every number of the platform's body reaches it, and leaves it, with its exact text.
jest.setTimeout(60000);

const platform = new FakePlatform();
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const bearer = { authorization: `Bearer ${ADMIN_TEST_TOKEN}` };
let f: ForwardingHarness;
let ledger: TargetServer;
let picky: TargetServer;
let exact: TargetServer;
let euro: TargetServer;

const LEDGER = `function transform(event) {
  const d = event.data.data || {};
  return { eventId: event.id, kind: event.type, at: event.timestamp, environment: event.environment, merchant: event.merchantId, paymentId: d.request_id, status: d.status === undefined ? null : d.status };
}`;

beforeAll(async () => {
  [ledger, picky, exact, euro] = await Promise.all([
    TargetServer.start(),
    TargetServer.start(),
    TargetServer.start(),
    TargetServer.start(),
  ]);
  f = buildForwarding(platform, [
    { name: 'ledger', url: ledger.url, secret: SECRET, transform: LEDGER },
    {
      name: 'picky',
      url: picky.url,
      transform: 'function transform(event) { return event.type === "fx.result" ? null : { type: event.type }; }',
    },
    {
      name: 'exact',
      url: exact.url,
      events: ['payment.result'],
      transform: `function transform(event) {
        const d = event.data.data;
        return { ledger: { amounts: [d.big, d.dime, d.negativeZero, d.huge, d.padded], again: { big: d.big } }, doubled: d.dime * 2, over: d.padded > 99.5, text: String(d.big) };
      }`,
    },
    // The filter sees the platform's body; the transform's output has no currency at all.
    {
      name: 'euro',
      url: euro.url,
      filter: { 'data.currency': 'EUR' },
      transform: 'function transform(event) { return { ok: 1 }; }',
    },
  ]);
});
afterAll(async () => {
  await f.close();
  await Promise.all([ledger, picky, exact, euro].map((t) => t.close()));
});

describe('a target with a transform', () => {
  it('receives the reshaped body, signed over what is sent (verified with standardwebhooks), for each of the seven event types; a null drops and is counted', async () => {
    const ids: Record<string, string> = {};
    for (const type of EVENT_TYPES) {
      await f.platform.send(f.receiver.app, f.platform.signed(type)).expect(200);
    }
    await ledger.waitFor(() => ledger.successes().length === EVENT_TYPES.length, 30000);
    const webhook = new Webhook(SECRET);
    for (const req of ledger.successes()) {
      const body = req.body.toString('utf8');
      const verified = webhook.verify(body, req.headers as Record<string, string>) as Record<string, unknown>;
      expect(req.headers['content-type']).toBe('application/json');
      expect(verified).toEqual({
        eventId: req.headers['webhook-id'],
        kind: expect.any(String),
        at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        environment: 'production',
        merchant: null,
        paymentId: expect.stringMatching(/^REQ/),
        status: verified.status === null ? null : expect.any(String),
      });
      // The body is exactly the transform's JSON: no envelope around it.
      expect(Object.keys(JSON.parse(body) as object)).toEqual([
        'eventId',
        'kind',
        'at',
        'environment',
        'merchant',
        'paymentId',
        'status',
      ]);
      ids[String(verified.kind)] = String(req.headers['webhook-id']);
    }
    expect(Object.keys(ids).sort()).toEqual([...EVENT_TYPES].sort());

    // picky returns null for fx.result: nothing sent, the delivery done, counted and shown as dropped.
    await picky.waitFor(() => picky.successes().length === EVENT_TYPES.length - 1, 30000);
    expect(picky.requests.map((r) => (JSON.parse(r.body.toString()) as { type: string }).type).sort()).toEqual(
      EVENT_TYPES.filter((t) => t !== 'fx.result').sort(),
    );
    const fxId = ids['fx.result']!;
    await waitUntil(
      async () => (await f.pipeline.deliveryQueue('picky')!.getJobState(fxId)) === 'completed',
      10000,
      'fx.result dropped by picky',
    );
    expect(
      await counterValue(f.metrics.deliveries, { target: 'picky', event_type: 'fx.result', outcome: 'dropped' }),
    ).toBe(1);
    expect(
      await counterValue(f.metrics.deliveries, { target: 'picky', outcome: 'delivered', event_type: 'fx.result' }),
    ).toBe(0);
    const view = (await request(f.admin).get(`/admin/api/events/${fxId}`).set(bearer).expect(200)).body as {
      deliveries: { target: string; state: string; deliveredAt?: string; attempts: { outcome: string }[] }[];
    };
    const dropped = view.deliveries.find((d) => d.target === 'picky')!;
    expect(dropped.state).toBe('dropped');
    expect(dropped.deliveredAt).toBeUndefined();
    expect(dropped.attempts.map((a) => a.outcome)).toEqual(['dropped']);
    expect(view.deliveries.find((d) => d.target === 'ledger')!.state).toBe('completed');
  });

  it('gets 12345678901234567.89, 0.10, -0, 1e400 and 100.000 with their exact text after a transform copies them into a new shape; numbers it computes are written as computed', async () => {
    const body =
      '{"type":"MERCH","data":{"request_id":"REQ-EXACT-1","big":12345678901234567.89,"dime":0.10,"negativeZero":-0,"huge":1e400,"padded":100.000}}';
    await f.platform.send(f.receiver.app, f.platform.signed('payment.result', { body })).expect(200);
    await exact.waitFor(() => exact.successes().length >= 1, 30000);
    const sent = exact.requests.map((r) => r.body.toString('utf8')).find((b) => b.includes('12345678901234567.89'));
    expect(sent).toBe(
      '{"ledger":{"amounts":[12345678901234567.89,0.10,-0,1e400,100.000],"again":{"big":12345678901234567.89}},"doubled":0.2,"over":true,"text":"12345678901234567.89"}',
    );
  });

  it("is judged by its filter on the platform's body, before the transform", async () => {
    await waitUntil(() => euro.successes().length >= 1, 30000, 'euro delivered');
    // Of the samples, payment.result alone is in EUR (the exact-numbers body has no currency).
    expect(euro.successes().map((r) => r.body.toString())).toEqual(['{"ok":1}']);
    expect(await counterValue(f.metrics.filtered, { target: 'euro' })).toBeGreaterThanOrEqual(EVENT_TYPES.length - 1);
  });
});
