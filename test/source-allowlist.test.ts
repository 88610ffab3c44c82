import request from 'supertest';
import { loadConfig } from '../src/config/load';
import { ConfigError } from '../src/config/errors';
import { buildHarness, type Harness } from './support/harness';
import { counterValue } from './support/metric-value';
import { startLiveReceiver } from './support/live-receiver';
import { FakePlatform } from './support/platform';
import { exchange, rawRequest } from './support/raw-http';

const platform = new FakePlatform();
const keyEnv = { PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64 };
let h: Harness;

async function queued(): Promise<number> {
  return h.pipeline.eventQueue('payment.result').count();
}

/** The tests' client connects from 127.0.0.1; the documentation ranges stand in for the platform. */
describe('PLATFORM_SOURCE_CIDRS', () => {
  afterEach(() => h.close());

  it('when the sender is outside the list, then a genuine notification is refused 403, logged, counted and not queued', async () => {
    h = buildHarness({ ...keyEnv, PLATFORM_SOURCE_CIDRS: '203.0.113.0/24, 2001:db8::/32' });
    const res = await platform.send(h.app, platform.signed('payment.result'));

    expect(res.status).toBe(403);
    expect(res.body).toEqual({ ret_code: '403000', ret_msg: 'Forbidden: source address not allowed' });
    expect(await queued()).toBe(0);
    expect(h.logs.find((l) => l.reason === 'source_not_allowed')).toMatchObject({
      level: 'warn',
      eventType: 'payment.result',
      source: expect.stringMatching(/127\.0\.0\.1$/),
    });
    expect(
      await counterValue(h.metrics.notifications, {
        event_type: 'payment.result',
        outcome: 'rejected',
        reason: 'source_not_allowed',
      }),
    ).toBe(1);
  });

  it('when the sender is outside the list, then /healthz still answers for load balancers', async () => {
    h = buildHarness({ ...keyEnv, PLATFORM_SOURCE_CIDRS: '203.0.113.0/24' });
    await request(h.app).get('/healthz').expect(200);
  });

  it('when the sender is inside the list, then the notification is queued', async () => {
    h = buildHarness({ ...keyEnv, PLATFORM_SOURCE_CIDRS: '203.0.113.0/24,127.0.0.0/8' });
    await platform.send(h.app, platform.signed('payment.result')).expect(200);
    expect(await queued()).toBe(1);
  });

  it('when unset, then any address may send (the signature still decides)', async () => {
    h = buildHarness(keyEnv);
    await platform.send(h.app, platform.signed('payment.result')).expect(200);
  });
});

describe('PLATFORM_SOURCE_CIDRS over IPv6', () => {
  it.each([
    ['::1/128', undefined, [200]],
    ['2001:db8::/32', undefined, []],
    ['2001:db8::/32', 'loopback', [403]],
  ])(
    'when the receiver listens on ::1, the list is %s and TRUST_PROXY %s, then a genuine notification gets %j (none: its connection is closed on arrival)',
    async (cidrs, trustProxy, statuses) => {
      const live = await startLiveReceiver({
        ...keyEnv,
        HOST: '::1',
        PLATFORM_SOURCE_CIDRS: cidrs,
        ...(trustProxy ? { TRUST_PROXY: trustProxy } : {}),
      });
      try {
        const n = platform.signed('payment.result');
        const bytes = rawRequest(
          'POST',
          n.target,
          [
            ['Host', 'x'],
            ['Connection', 'close'],
            ...Object.entries(n.headers),
            ['Content-Length', String(n.body.length)],
          ],
          n.body,
        );
        const ex = await exchange(live.port, bytes, { host: '::1' });
        expect(ex.responses.map((r) => r.status)).toEqual(statuses);
        expect(ex.closedByServer).toBe(true);
        if (statuses.length === 0)
          expect(await counterValue(live.metrics.portRefusals, { reason: 'source_not_allowed' })).toBe(1);
      } finally {
        await live.close();
      }
    },
  );
});

describe('TRUST_PROXY with the allowlist', () => {
  afterEach(() => h.close());
  const listed = '203.0.113.9';
  const elsewhere = '198.51.100.1';

  it('when no proxy is trusted, then X-Forwarded-For is ignored: a forged listed address does not get in', async () => {
    h = buildHarness({ ...keyEnv, PLATFORM_SOURCE_CIDRS: '203.0.113.0/24' });
    const n = platform.signed('payment.result');
    await platform.send(h.app, { ...n, headers: { ...n.headers, 'x-forwarded-for': listed } }).expect(403);
  });

  it('when the load balancer on loopback is trusted, then the address it forwards decides', async () => {
    h = buildHarness({ ...keyEnv, PLATFORM_SOURCE_CIDRS: '203.0.113.0/24', TRUST_PROXY: 'loopback' });
    const n = platform.signed('payment.result');
    await platform.send(h.app, { ...n, headers: { ...n.headers, 'x-forwarded-for': listed } }).expect(200);
    const m = platform.signed('payment.result');
    await platform.send(h.app, { ...m, headers: { ...m.headers, 'x-forwarded-for': elsewhere } }).expect(403);
  });

  it('when the proxies are named by address, then a sender that is not one of them is judged by its own address, whatever X-Forwarded-For it forges', async () => {
    h = buildHarness({ ...keyEnv, PLATFORM_SOURCE_CIDRS: '203.0.113.0/24', TRUST_PROXY: '192.0.2.1' });
    const n = platform.signed('payment.result');
    await platform.send(h.app, { ...n, headers: { ...n.headers, 'x-forwarded-for': listed } }).expect(403);
  });
});

describe('configuration', () => {
  function problems(env: Record<string, string>): string[] {
    try {
      loadConfig({ ...keyEnv, ...env });
    } catch (err) {
      if (err instanceof ConfigError) return err.problems;
      throw err;
    }
    return [];
  }

  it('when a CIDR or a trusted proxy is not an address, then the problem is named as the variable and item', () => {
    expect(problems({ PLATFORM_SOURCE_CIDRS: '203.0.113.0/24,10.0.0.0/33,example.com' })).toEqual([
      expect.stringMatching(/^PLATFORM_SOURCE_CIDRS\[1\]: must be an IPv4 or IPv6 address or CIDR/),
      expect.stringMatching(/^PLATFORM_SOURCE_CIDRS\[2\]: /),
    ]);
    expect(problems({ TRUST_PROXY: 'true' })).toEqual([expect.stringMatching(/^TRUST_PROXY/)]);
    expect(problems({ TRUST_PROXY: '1' })).toEqual([
      expect.stringMatching(/^TRUST_PROXY: a hop count is refused: it would believe X-Forwarded-For from any sender/),
    ]);
    expect(problems({ TRUST_PROXY: '10.0.0.0/8,loopback', PLATFORM_SOURCE_CIDRS: '2001:db8::/32,192.0.2.7' })).toEqual(
      [],
    );
  });

  it('reads a list of proxies from TRUST_PROXY', () => {
    expect(loadConfig({ ...keyEnv, TRUST_PROXY: '10.0.0.0/8, loopback' }).trustProxy).toEqual([
      '10.0.0.0/8',
      'loopback',
    ]);
    expect(loadConfig(keyEnv).trustProxy).toBeUndefined();
    expect(loadConfig(keyEnv).platformSourceCidrs).toEqual([]);
  });
});
