import { Webhook } from 'standardwebhooks';
import { buildForwarding, perWindow, waitUntil, type ForwardingHarness } from './support/forwarding-harness';
import { FakePlatform } from './support/platform';
import { TargetServer } from './support/target-server';

const platform = new FakePlatform();
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
let f: ForwardingHarness | undefined;
const servers: TargetServer[] = [];

async function target(behaviour?: Parameters<typeof TargetServer.start>[0]) {
  const server = await TargetServer.start(behaviour);
  servers.push(server);
  return server;
}

afterEach(async () => {
  await f?.close();
  f = undefined;
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function notify(type: Parameters<FakePlatform['signed']>[0] = 'payment.result', body?: string) {
  const n = platform.signed(type, body === undefined ? {} : { body });
  await platform.send(f!.receiver.app, n).expect(200);
  return n;
}

describe('fan-out', () => {
  it('when one of three targets fails, then the healthy two get the event exactly once and the failing one is dead-lettered after maxAttempts', async () => {
    const ledger = await target();
    const crm = await target();
    const broken = await target(() => ({ status: 500, body: 'database is down' }));
    f = buildForwarding(platform, [
      { name: 'ledger', url: ledger.url },
      { name: 'crm', url: crm.url },
      { name: 'broken', url: broken.url, maxAttempts: 3 },
    ]);

    const n = await notify();
    await broken.waitFor(() => broken.requests.length === 3);
    await waitUntil(async () => (await f!.deadLetters.list({ target: 'broken' })).length === 1, 5000, 'dead letter');

    expect(ledger.requests).toHaveLength(1);
    expect(crm.requests).toHaveLength(1);
    const [dead] = await f.deadLetters.list({ target: 'broken' });
    expect(dead).toMatchObject({
      target: 'broken',
      eventType: 'payment.result',
      attempts: 3,
      lastFailure: { status: 500, attempt: 3, responseExcerpt: 'database is down' },
    });
    expect(JSON.parse(ledger.requests[0]!.body.toString()).data).toEqual(JSON.parse(n.body.toString()));
    expect(f.logs.find((l) => l.message === 'delivery dead-lettered' && l.target === 'broken')).toBeDefined();
    await new Promise((r) => setTimeout(r, 300)); // no late second delivery to the healthy ones
    expect(ledger.requests).toHaveLength(1);
    expect(crm.requests).toHaveLength(1);
  });

  it('sends each event only to the targets subscribed to its type', async () => {
    const payments = await target();
    const everything = await target();
    f = buildForwarding(platform, [
      { name: 'payments', url: payments.url, events: ['payment.result'] },
      { name: 'everything', url: everything.url, events: ['*'] },
    ]);
    await notify('payment.result');
    await notify('fx.result');
    await everything.waitFor(() => everything.requests.length === 2);
    await new Promise((r) => setTimeout(r, 200));
    expect(payments.requests.map((r) => r.headers['webhook-id'])).toHaveLength(1);
    expect(JSON.parse(payments.requests[0]!.body.toString()).type).toBe('payment.result');
  });

  it('when no target subscribes to an event, then the event is kept as a failed job and counted', async () => {
    const payments = await target();
    f = buildForwarding(platform, [{ name: 'payments', url: payments.url, events: ['payment.result'] }]);
    await notify('fx.result');
    const queue = f.receiver.pipeline.eventQueue('fx.result');
    await waitUntil(async () => (await queue.getFailedCount()) === 1, 5000, 'unrouted event kept');
    const [job] = await queue.getFailed();
    expect(job!.failedReason).toMatch(/no target subscribes to fx.result/);
    expect(f.logs.find((l) => l.message === 'event kept: no target subscribes to its type')).toBeDefined();
  });
});

describe('retries', () => {
  it('when a target fails transiently then succeeds, then it is delivered once with the same webhook-id on every attempt', async () => {
    const flaky = await target((n) => ({ status: n < 2 ? 503 : 200 }));
    f = buildForwarding(platform, [{ name: 'flaky', url: flaky.url, maxAttempts: 5 }]);
    await notify();
    await flaky.waitFor(() => flaky.successes().length === 1);
    await new Promise((r) => setTimeout(r, 200));

    expect(flaky.requests.map((r) => r.answered)).toEqual([503, 503, 200]);
    expect(new Set(flaky.requests.map((r) => r.headers['webhook-id'])).size).toBe(1);
    expect(flaky.requests[0]!.headers['webhook-id']).toMatch(/^evt_/);
  });

  it('honours Retry-After', async () => {
    const limited = await target((n) => (n === 0 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 }));
    f = buildForwarding(platform, [{ name: 'limited', url: limited.url }]);
    await notify();
    await limited.waitFor(() => limited.successes().length === 1, 5000);
    const gap = limited.requests[1]!.at - limited.requests[0]!.at;
    expect(gap).toBeGreaterThanOrEqual(950); // the backoff alone would be 25 to 50 ms
  });

  it('when a target answers 400, then it is not retried and is dead-lettered at once', async () => {
    const strict = await target(() => ({ status: 400, body: 'unknown field' }));
    f = buildForwarding(platform, [{ name: 'strict', url: strict.url, maxAttempts: 5 }]);
    await notify();
    await waitUntil(async () => (await f!.deadLetters.list()).length === 1, 5000, 'dead letter');
    await new Promise((r) => setTimeout(r, 300));
    expect(strict.requests).toHaveLength(1);
    const [dead] = await f.deadLetters.list();
    expect(dead!.lastFailure).toMatchObject({ status: 400, responseExcerpt: 'unknown field' });
  });

  it('when a target times out, then the delivery is retried', async () => {
    const slow = await target((n) => (n === 0 ? 'hang' : { status: 200 }));
    f = buildForwarding(platform, [{ name: 'slow', url: slow.url, timeoutMs: 300 }]);
    await notify();
    await slow.waitFor(() => slow.successes().length === 1, 5000);
    expect(slow.requests).toHaveLength(2);
    expect(
      f.logs.find((l) => l.message === 'delivery attempt failed; will retry' && /timeout/.test(String(l.error))),
    ).toBeDefined();
  });
});

describe('the forwarded request', () => {
  it('standard: the body is {id, type, timestamp, data} and webhook-signature verifies with the standardwebhooks package', async () => {
    const ledger = await target();
    f = buildForwarding(platform, [
      { name: 'ledger', url: ledger.url, secret: SECRET, headers: { authorization: 'Bearer internal-token' } },
    ]);
    const body = '{"type":"MERCH","data":{"amount":1.10,"new_field":[1,2]}}';
    await notify('payment.result', body);
    await ledger.waitFor(() => ledger.requests.length === 1);
    const req = ledger.requests[0]!;

    const verified = new Webhook(SECRET).verify(req.body, req.headers as Record<string, string>) as Record<
      string,
      unknown
    >;
    expect(verified).toMatchObject({ id: req.headers['webhook-id'], type: 'payment.result' });
    expect(req.body.toString()).toContain(`"data":${body}}`); // spliced as received: 1.10 stays 1.10
    expect(req.headers.authorization).toBe('Bearer internal-token');
  });

  it('with secret: [new, old] (a rotation), webhook-signature holds one v1 signature per secret and verifies under each', async () => {
    const NEW_SECRET = 'whsec_QmV0dGVyIHJvdGF0ZSB0aGlzIHNlY3JldCBzb29u';
    const ledger = await target();
    f = buildForwarding(platform, [{ name: 'ledger', url: ledger.url, secret: [NEW_SECRET, SECRET] }]);
    await notify('payment.result', '{"type":"MERCH","data":{"status":"SUCCESS"}}');
    await ledger.waitFor(() => ledger.requests.length === 1);
    const req = ledger.requests[0]!;
    const headers = req.headers as Record<string, string>;

    expect(headers['webhook-signature']!.split(' ')).toEqual([
      expect.stringMatching(/^v1,/),
      expect.stringMatching(/^v1,/),
    ]);
    for (const secret of [NEW_SECRET, SECRET]) {
      expect(new Webhook(secret).verify(req.body, headers)).toMatchObject({
        id: headers['webhook-id'],
        type: 'payment.result',
      });
    }
    expect(() => new Webhook('whsec_c29tZSBvdGhlciBzZWNyZXQgbm90IGNvbmZpZ3VyZWQ=').verify(req.body, headers)).toThrow(
      /No matching signature/,
    );
  });

  it('passthrough: the original bytes and the platform signature headers arrive unchanged', async () => {
    const verifier = await target();
    f = buildForwarding(platform, [{ name: 'verifier', url: verifier.url, format: 'passthrough' }]);
    const n = await notify('fx.result', '{\r\n "type": "MERCH" ,"data":{}}\n');
    await verifier.waitFor(() => verifier.requests.length === 1);
    const req = verifier.requests[0]!;
    expect(req.body.equals(n.body)).toBe(true);
    for (const name of ['x-svc-timestamp', 'x-svc-nonce', 'x-svc-sign', 'x-svc-sign-alg']) {
      expect(req.headers[name]).toBe(n.headers[name]);
    }
    expect(req.headers['x-forwarded-uri']).toBe(n.target);
    expect(req.headers['webhook-signature']).toBeUndefined();
  });

  it('passthrough with a secret: also carries a fresh webhook-signature over the original bytes', async () => {
    const verifier = await target();
    f = buildForwarding(platform, [{ name: 'verifier', url: verifier.url, format: 'passthrough', secret: SECRET }]);
    const n = await notify('fx.result', '{"type":"MERCH","data":{"x":1}}');
    await verifier.waitFor(() => verifier.requests.length === 1);
    const req = verifier.requests[0]!;
    expect(req.body.equals(n.body)).toBe(true);
    expect(new Webhook(SECRET).verify(req.body, req.headers as Record<string, string>)).toEqual({
      type: 'MERCH',
      data: { x: 1 },
    });
  });
});

describe('flow control', () => {
  it('holds per-target concurrency, measured at the target', async () => {
    const slow = await target(() => ({ status: 200, delayMs: 150 }));
    f = buildForwarding(platform, [{ name: 'slow', url: slow.url, concurrency: 3 }]);
    for (let i = 0; i < 12; i++) await notify('payment.result', `{"type":"MERCH","data":{"i":${i}}}`);
    await slow.waitFor(() => slow.successes().length === 12, 10000);
    expect(slow.maxInFlight).toBe(3);
  });

  it('holds the per-target rate limit, measured on when each delivery started', async () => {
    const sink = await target();
    f = buildForwarding(platform, [{ name: 'sink', url: sink.url, rateLimit: { max: 4, perMs: 500 } }]);
    for (let i = 0; i < 12; i++) await notify('payment.result', `{"type":"MERCH","data":{"i":${i}}}`);
    await sink.waitFor(() => sink.successes().length === 12, 10000);
    // BullMQ's limiter opens a window of perMs at the first job after the previous window closed and
    // lets `max` jobs start in it. Replayed on when each job started (processedOn, stamped as the worker
    // takes it), not on arrival at the target: the target shares this process's event loop, and a
    // stall of it on a loaded machine shifts arrivals from one window into another.
    // A job is marked completed a moment after its request reached the target: wait for all 12.
    const queue = f.pipeline.deliveryQueue('sink')!;
    await waitUntil(async () => (await queue.getCompletedCount()) === 12, 10_000, 'all 12 deliveries completed');
    const started = await queue.getCompleted(0, 20);
    expect(started).toHaveLength(12);
    const times = started.map((j) => j.processedOn!).sort((a, b) => a - b);
    // 12 deliveries at 4 per 500 ms take at least two full windows after the first.
    expect(times[11]! - times[0]!).toBeGreaterThanOrEqual(950);
    // The windows, 25 ms shorter for the clocks' jitter.
    const windows = perWindow(times, 475);
    expect(Math.max(...windows)).toBeLessThanOrEqual(4);
    expect(windows.length).toBeGreaterThanOrEqual(3);
  });
});
