import request from 'supertest';
import { EVENT_TABLE, type EventType } from '../src/model/event-table';
import { SUCCESS } from '../src/http/envelope';
import { buildHarness, type Harness } from './support/harness';
import { counterValue } from './support/metric-value';
import { FakePlatform } from './support/platform';

const platform = new FakePlatform();
let h: Harness;

beforeEach(() => {
  h = buildHarness({ PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64 });
});
afterEach(() => h.close());

const ANY_STATE = ['waiting', 'active', 'completed', 'failed', 'delayed'] as const;

async function jobsIn(type: EventType) {
  return h.pipeline.eventQueue(type).getJobs([...ANY_STATE]);
}

async function quarantined() {
  return h.pipeline.quarantine.getJobs([...ANY_STATE]);
}

describe('receiving a signed notification', () => {
  it.each(EVENT_TABLE.map((e) => [e.type, e.path] as const))(
    'when %s arrives on %s, then it answers 200 after queueing its typed event',
    async (type, path) => {
      const n = platform.signed(type);
      const res = await platform.send(h.app, n);

      expect(res.status).toBe(200);
      expect(res.body).toEqual(SUCCESS);
      const jobs = await jobsIn(type);
      expect(jobs).toHaveLength(1);
      const data = jobs[0]!.data;
      expect(data).toMatchObject({
        eventType: type,
        path,
        nonce: n.headers['x-svc-nonce'],
        timestamp: Number(n.headers['x-svc-timestamp']),
        rawBody: n.body.toString('utf8'),
        rawBodyEncoding: 'utf8',
        scheme: 'current',
      });
      expect(data.eventId).toMatch(/^evt_[0-9a-f]{40}$/);
      expect(data.payload).toEqual(JSON.parse(n.body.toString('utf8')));
      expect(Date.parse(data.receivedAt)).not.toBeNaN();
      const line = h.logs.find((l) => l.message === 'notification received');
      expect(line).toMatchObject({
        eventId: data.eventId,
        eventType: type,
        outcome: 'accepted',
        nonce: n.headers['x-svc-nonce'],
      });
      expect(typeof line!.latencyMs).toBe('number');
    },
  );

  it('when the platform adds unknown fields, then the payload keeps them', async () => {
    const n = platform.signed('payment.result', {
      body: '{"type":"MERCH","data":{"x":1},"brand_new_field":{"deep":[1,2]}}',
    });
    await platform.send(h.app, n).expect(200);
    const [job] = await jobsIn('payment.result');
    expect(job!.data.payload).toEqual({ type: 'MERCH', data: { x: 1 }, brand_new_field: { deep: [1, 2] } });
  });

  it("when the same body comes again under another X-Merch-Id, then it stays one event, the first header's, and the copy is a conflict", async () => {
    // X-Merch-Id is not signed: a copy re-sent under another one must not become a second event.
    const body = '{"type":"MERCH","data":{"status":"SUCCESS"}}';
    const answers = [];
    for (const sub of ['SUB-1', 'SUB-2']) {
      const n = platform.signed('payment.result', { body });
      answers.push(
        (await platform.send(h.app, { ...n, headers: { ...n.headers, 'x-merch-id': sub } }).expect(200)).body,
      );
    }
    const jobs = await jobsIn('payment.result');
    expect(jobs.map((j) => j.data.merchantId)).toEqual(['SUB-1']);
    expect(answers[1]).toEqual(answers[0]);
    expect(h.logs.find((l) => l.outcome === 'conflict')).toMatchObject({
      level: 'warn',
      merchantId: 'SUB-2',
      firstMerchantId: 'SUB-1',
    });
  });

  it.each([
    ['with a space', 'SUB 1'],
    ['over 64 characters', 'S'.repeat(65)],
    ['with a slash', 'SUB/1'],
    ['sent twice (joined by Node)', 'SUB-1, SUB-2'],
    ['with a newline escape', 'SUB%0A1'],
  ])(
    'when X-Merch-Id is malformed (%s), then it answers 400 with the envelope and the reason, and queues nothing',
    async (_case, value) => {
      const n = platform.signed('payment.result');
      const res = await platform.send(h.app, { ...n, headers: { ...n.headers, 'x-merch-id': value } });

      expect(res.status).toBe(400);
      expect(res.body).toEqual({ ret_code: '400000', ret_msg: expect.stringMatching(/X-Merch-Id/) });
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(await jobsIn('payment.result')).toHaveLength(0);
      expect(
        h.logs.find((l) => l.message === 'notification rejected' && l.reason === 'malformed_merchant_id'),
      ).toBeDefined();
      expect(
        await counterValue(h.metrics.notifications, {
          event_type: 'payment.result',
          outcome: 'rejected',
          reason: 'malformed_merchant_id',
        }),
      ).toBe(1);
      // Refused before anything was remembered: the genuine request with the same nonce still goes through.
      await platform.send(h.app, n).expect(200);
      expect(await jobsIn('payment.result')).toHaveLength(1);
    },
  );

  it('when X-Merch-Id is sent, then the event keeps it', async () => {
    const n = platform.signed('payment.result');
    await platform.send(h.app, { ...n, headers: { ...n.headers, 'x-merch-id': 'SUB-42' } }).expect(200);
    const [job] = await jobsIn('payment.result');
    expect(job!.data.merchantId).toBe('SUB-42');
  });
});

describe('replays and duplicates', () => {
  it('when the identical request arrives again, then it answers 200 and queues nothing', async () => {
    const n = platform.signed('fx.result');
    await platform.send(h.app, n).expect(200);
    const again = await platform.send(h.app, n);

    expect(again.status).toBe(200);
    expect(again.body).toEqual(SUCCESS);
    expect(await jobsIn('fx.result')).toHaveLength(1);
    expect(h.logs.find((l) => l.outcome === 'replay')).toBeDefined();
    expect(await counterValue(h.metrics.notifications, { event_type: 'fx.result', outcome: 'replay' })).toBe(1);
  });

  it('when the same body arrives under a new nonce, then it answers 200 and queues nothing', async () => {
    const body = '{"type":"MERCH","data":{"request_id":"SAME-1"}}';
    await platform.send(h.app, platform.signed('payee.result', { body })).expect(200);
    const retry = await platform.send(h.app, platform.signed('payee.result', { body }));

    expect(retry.status).toBe(200);
    expect(await jobsIn('payee.result')).toHaveLength(1);
    expect(h.logs.find((l) => l.outcome === 'duplicate')).toBeDefined();
  });

  it('when the same body arrives on two paths, then each event type queues it once', async () => {
    const body = '{"type":"MERCH","data":{"request_id":"SHARED"}}';
    await platform.send(h.app, platform.signed('payee.result', { body })).expect(200);
    await platform.send(h.app, platform.signed('fx.result', { body })).expect(200);
    expect(await jobsIn('payee.result')).toHaveLength(1);
    expect(await jobsIn('fx.result')).toHaveLength(1);
  });

  it('when a forged request uses a nonce first, then the genuine request with that nonce is still queued', async () => {
    const genuine = platform.signed('payment.result', { nonce: 'shared-nonce-000001' });
    const forged = { ...genuine, body: Buffer.from('{"type":"MERCH","data":{"amount":"999999"}}') };

    const refused = await platform.send(h.app, forged);
    const accepted = await platform.send(h.app, genuine);

    expect(refused.status).toBe(401);
    expect(accepted.status).toBe(200);
    const jobs = await jobsIn('payment.result');
    expect(jobs.map((j) => j.data.rawBody)).toEqual([genuine.body.toString()]);
  });
});

describe('quarantine', () => {
  it('when a signed body is not JSON, then it is acknowledged and kept in quarantine with the reason', async () => {
    const n = platform.signed('settlement.result', { body: 'status=SUCCESS&id=1' });
    const res = await platform.send(h.app, n);

    expect(res.status).toBe(200);
    expect(await jobsIn('settlement.result')).toHaveLength(0);
    const [job] = await quarantined();
    const data = job!.data;
    expect(data).toMatchObject({
      eventType: 'settlement.result',
      rawBody: 'status=SUCCESS&id=1',
      nonce: n.headers['x-svc-nonce'],
    });
    expect(data.errors[0]).toMatch(/not JSON/);
    expect(data.errors.join()).not.toContain('status='); // no payload text in errors, which are logged
    expect(h.logs.find((l) => l.level === 'error' && l.outcome === 'quarantined')).toBeDefined();
  });

  it('when a remittance notification lacks type INCOMING_REMITTANCE, then it is quarantined with the schema error', async () => {
    const n = platform.signed('remittance.incoming', { body: '{"type":"MERCH","data":{}}' });
    await platform.send(h.app, n).expect(200);
    const [job] = await quarantined();
    expect(job!.data.errors.join()).toMatch(/^type:/);
  });

  it('when a signed body is not UTF-8, then quarantine keeps its exact bytes', async () => {
    const bytes = Buffer.from([0x7b, 0xff, 0xfe, 0x7d]);
    await platform.send(h.app, platform.signed('payment.result', { body: bytes })).expect(200);
    const [job] = await quarantined();
    const data = job!.data;
    expect(data.rawBodyEncoding).toBe('base64');
    expect(Buffer.from(data.rawBody, 'base64')).toEqual(bytes);
  });
});

describe('bad requests', () => {
  it('when the path is unknown, then it answers 404 with the envelope', async () => {
    const res = await request(h.app).post('/api/v2/merch/nothing/notify').send('{}');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ ret_code: '404000', ret_msg: 'Not Found' });
  });

  it('when a notify path is called with GET, then it answers 405 with Allow: POST', async () => {
    const res = await request(h.app).get('/api/v2/merch/pay/notify');
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('POST');
    expect(res.body.ret_code).toBe('405000');
  });

  it('when the body is over the limit, then it answers 413 with the envelope and queues nothing', async () => {
    const big = `{"type":"MERCH","pad":"${'x'.repeat(1024 * 1024)}"}`;
    const res = await platform.send(h.app, platform.signed('payment.result', { body: big }));
    expect(res.status).toBe(413);
    expect(res.body.ret_code).toBe('413000');
    expect(await jobsIn('payment.result')).toHaveLength(0);
    expect(h.logs.find((l) => l.reason === 'body_too_large')).toBeDefined();
  });

  it('answers notify paths with the same helmet headers as every other route', async () => {
    const notify = await platform.send(h.app, platform.signed('payment.result')).expect(200);
    const other = await request(h.app).get('/healthz');
    for (const name of [
      'content-security-policy',
      'x-content-type-options',
      'strict-transport-security',
      'x-frame-options',
    ]) {
      expect(notify.headers[name]).toBeDefined();
      expect(notify.headers[name]).toBe(other.headers[name]);
    }
  });

  it('answers liveness on /healthz and sets helmet headers', async () => {
    const res = await request(h.app).get('/healthz');
    expect(res.status).toBe(200);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-powered-by']).toBeUndefined();
  });
});

describe('behind a CALLBACK_BASE_PATH', () => {
  let prefixed: Harness;
  beforeAll(() => {
    prefixed = buildHarness({
      PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
      CALLBACK_BASE_PATH: '/hooks/platform',
    });
  });
  afterAll(() => prefixed.close());

  it('serves the notify paths under the prefix and verifies the full request target, query included', async () => {
    const n = platform.signed('payment.result', { basePath: '/hooks/platform', query: '?merchant=M1&note=a%20b' });
    await platform.send(prefixed.app, n).expect(200);
    const [job] = await prefixed.pipeline.eventQueue('payment.result').getJobs(['waiting']);
    expect(job!.data.path).toBe('/hooks/platform/api/v2/merch/pay/notify?merchant=M1&note=a%20b');
  });

  it('refuses a signature made over the path without the prefix, and 404s the bare path', async () => {
    const bare = platform.signed('payment.result');
    await platform.send(prefixed.app, { ...bare, target: `/hooks/platform${bare.target}` }).expect(401);
    await platform.send(prefixed.app, bare).expect(404);
  });
});
