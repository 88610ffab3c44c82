import { writeFileSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { stringify } from 'yaml';
import { PassThrough } from 'node:stream';
import { runCli } from '../src/cli/run';
import { createLogger } from '../src/logging/logger';
import { createReloader, ReloadRefusedError } from '../src/operations/reload';
import { eventIdFor } from '../src/model/ids';
import { ADMIN_TEST_TOKEN, buildForwarding, waitUntil, type ForwardingHarness } from './support/forwarding-harness';
import { counterValue } from './support/metric-value';
import { FakePlatform } from './support/platform';
import { TargetServer } from './support/target-server';
import { tempDir } from './support/temp-dir';

/** A target's delivery in the event view when its filter left the event out: no job, no attempt. */
const filteredView = (target: string) => ({
  target,
  state: 'filtered',
  attemptsMade: 0,
  totalAttempts: 0,
  failedAttempts: [],
  attempts: [],
  series: [],
});

const platform = new FakePlatform();
let f: ForwardingHarness;
let usdEur: TargetServer;
let sub42: TargetServer;
let everything: TargetServer;
let fxSub42: TargetServer;
let targets: Record<string, unknown>[];

beforeAll(async () => {
  [usdEur, sub42, everything, fxSub42] = await Promise.all([
    TargetServer.start(),
    TargetServer.start(),
    TargetServer.start(),
    TargetServer.start(),
  ]);
  // The harness's short timeouts written out, so a configuration file with these targets equals the running one.
  const quick = { timeoutMs: 2000, maxAttempts: 3, backoff: { initialMs: 50, maxMs: 200 } };
  targets = [
    {
      name: 'usd-eur',
      url: usdEur.url,
      events: ['payment.result'],
      filter: { 'data.currency': { $in: ['USD', 'EUR'] } },
      ...quick,
    },
    { name: 'sub-42', url: sub42.url, events: ['payment.result'], filter: { merchantId: 'SUB-42' }, ...quick },
    { name: 'everything', url: everything.url, events: ['payment.result'], ...quick },
    { name: 'fx-sub-42', url: fxSub42.url, events: ['fx.result'], filter: { merchantId: 'SUB-42' }, ...quick },
  ];
  f = buildForwarding(platform, targets);
});
afterAll(async () => {
  await f.close();
  await Promise.all([usdEur, sub42, everything, fxSub42].map((t) => t.close()));
});

let sent = 0;
/** Sends a notification (with X-Merch-Id when given) and returns its event id, which targets see as webhook-id. */
async function notify(
  type: 'payment.result' | 'fx.result',
  data: Record<string, unknown>,
  merchantId?: string,
): Promise<string> {
  const n = platform.signed(type, {
    body: JSON.stringify({ type: 'PAY', data: { request_id: `FILTER-${++sent}`, ...data } }),
  });
  if (merchantId) n.headers['x-merch-id'] = merchantId;
  await platform.send(f.receiver.app, n).expect(200);
  return eventIdFor(type, 'production', n.body);
}

const idsAt = (t: TargetServer) => t.requests.map((r) => String(r.headers['webhook-id']));
const eventView = (id: string) =>
  request(f.admin).get(`/admin/api/events/${id}`).set('authorization', `Bearer ${ADMIN_TEST_TOKEN}`).expect(200);
const stateOf = (view: { deliveries: { target: string; state: string }[] }, target: string) =>
  view.deliveries.find((d) => d.target === target)?.state;

describe('a target with a filter', () => {
  let usd: string;
  let gbpSub42: string;
  let eurSub7: string;

  beforeAll(async () => {
    usd = await notify('payment.result', { currency: 'USD' });
    gbpSub42 = await notify('payment.result', { currency: 'GBP' }, 'SUB-42');
    eurSub7 = await notify('payment.result', { currency: 'EUR' }, 'SUB-7');
    await everything.waitFor(() => everything.successes().length === 3, 20000);
    // The receiver wrote every delivery job when it accepted the notification: let them all finish.
    const queues = f.pipeline.deliveryQueues().map(([, q]) => q);
    await waitUntil(
      async () =>
        (await Promise.all(queues.map((q) => q.getJobCountByTypes('waiting', 'active', 'delayed')))).every(
          (n) => n === 0,
        ),
      10000,
      'deliveries settled',
    );
    await new Promise((r) => setTimeout(r, 300)); // room for a wrong late delivery to show up
  });

  it('on a payload field: receives only the events whose data.currency is in its list', () => {
    expect(idsAt(usdEur).sort()).toEqual([usd, eurSub7].sort());
    expect(idsAt(everything).sort()).toEqual([usd, gbpSub42, eurSub7].sort());
  });

  it('on merchantId: receives only the events whose X-Merch-Id is its sub-merchant', () => {
    expect(idsAt(sub42)).toEqual([gbpSub42]);
    expect(sub42.requests[0]!.headers['x-merch-id']).toBe('SUB-42');
  });

  it('the event view says filtered for the targets that left the event out, and each filtering is counted', async () => {
    const view = (await eventView(gbpSub42)).body;
    expect(stateOf(view, 'usd-eur')).toBe('filtered');
    expect(stateOf(view, 'sub-42')).toBe('completed');
    expect(stateOf(view, 'everything')).toBe('completed');
    expect(view.deliveries.find((d: { target: string }) => d.target === 'usd-eur')).toEqual(filteredView('usd-eur'));
    expect(stateOf((await eventView(usd)).body, 'sub-42')).toBe('filtered');
    expect(stateOf((await eventView(usd)).body, 'fx-sub-42')).toBeUndefined(); // not subscribed to payment.result: not a delivery at all

    expect(await counterValue(f.metrics.filtered, { target: 'usd-eur' })).toBe(1);
    expect(await counterValue(f.metrics.filtered, { target: 'sub-42' })).toBe(2);
    expect(await counterValue(f.metrics.filtered, { target: 'everything' })).toBe(0);
  });

  it('the CLI event command shows the filtered deliveries', async () => {
    const file = path.join(tempDir('filter-cli'), 'config.yaml');
    writeFileSync(file, stringify({ targets }));
    const lines: string[] = [];
    const env = { CONFIG_FILE: file, REDIS_URL: f.config.redisUrl, QUEUE_PREFIX: f.config.queuePrefix };
    expect(await runCli(['event', gbpSub42], { env, out: (l) => lines.push(l), log: new PassThrough() })).toBe(0);
    expect(lines.join('\n')).toMatch(/^usd-eur\s+filtered\s+0/m);
    expect(lines.join('\n')).toMatch(/^sub-42\s+completed\s+1/m);
  });

  it('a resend goes to the targets whose filter matches, and reports the others as filtered, even when named', async () => {
    const res = await request(f.admin)
      .post(`/admin/api/events/${gbpSub42}/resend`)
      .set('authorization', `Bearer ${ADMIN_TEST_TOKEN}`)
      .send({})
      .expect(200);
    expect(res.body).toEqual({
      eventId: gbpSub42,
      targets: [
        { target: 'sub-42', outcome: 'resent' },
        { target: 'everything', outcome: 'resent' },
        { target: 'usd-eur', outcome: 'filtered' },
      ],
    });
    await sub42.waitFor(() => idsAt(sub42).filter((id) => id === gbpSub42).length === 2, 20000);

    const lines: string[] = [];
    const file = path.join(tempDir('filter-cli'), 'config.yaml');
    writeFileSync(file, stringify({ targets }));
    const env = { CONFIG_FILE: file, REDIS_URL: f.config.redisUrl, QUEUE_PREFIX: f.config.queuePrefix };
    expect(
      await runCli(['event', 'resend', gbpSub42, '--target', 'usd-eur'], {
        env,
        out: (l) => lines.push(l),
        log: new PassThrough(),
      }),
    ).toBe(1);
    expect(lines).toEqual([`filtered     usd-eur/${gbpSub42}`]);
    await new Promise((r) => setTimeout(r, 300));
    expect(idsAt(usdEur)).not.toContain(gbpSub42);
  });
});

describe('an event every subscribed target filtered out', () => {
  it('is done, not unrouted: completed, no warning, each target shown as filtered', async () => {
    const unroutedBefore = await counterValue(f.metrics.unrouted, { event_type: 'fx.result' });
    const id = await notify('fx.result', { currency: 'USD' }, 'SUB-7');
    const queue = f.pipeline.eventQueue('fx.result');
    await waitUntil(async () => (await queue.getCompletedCount()) === 1, 10000, 'fan-out completed');

    expect(await queue.getFailedCount()).toBe(0);
    expect(await counterValue(f.metrics.unrouted, { event_type: 'fx.result' })).toBe(unroutedBefore);
    expect(f.logs.find((l) => l.message === 'event kept: no target subscribes to its type')).toBeUndefined();
    const view = (await eventView(id)).body;
    expect(view.state).toBe('completed');
    expect(view.deliveries).toEqual([filteredView('fx-sub-42')]);
    expect(fxSub42.requests).toHaveLength(0);
  });
});

describe('reloading a filter', () => {
  it('an invalid filter is refused naming the target and the key, and the running filter stays; a valid one applies to events fanned out afterwards', async () => {
    const file = path.join(tempDir('filter-reload'), 'config.yaml');
    const env = {
      CONFIG_FILE: file,
      REDIS_URL: f.config.redisUrl,
      QUEUE_PREFIX: f.config.queuePrefix,
      PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
    };
    const reloader = createReloader({
      env,
      config: f.config,
      pipeline: f.pipeline,
      workers: f.workers,
      logger: createLogger('info', f.logs.stream),
    });
    const withFilter = (filter: unknown) => targets.map((t) => (t.name === 'usd-eur' ? { ...t, filter } : t));

    writeFileSync(file, stringify({ targets: withFilter({ 'data.currency': { $nin: 'GBP' } }) }));
    const refused = await reloader.reload({ principal: 'test' }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(ReloadRefusedError);
    expect((refused as ReloadRefusedError).problems).toEqual([
      `targets.0.filter: target "usd-eur": "data.currency": $nin takes a list of values (in ${file})`,
    ]);
    expect(f.logs.find((l) => l.action === 'config.reload' && l.refused === true)).toMatchObject({
      problems: (refused as ReloadRefusedError).problems,
    });

    const before = usdEur.requests.length;
    const usdAfterRefusal = await notify('payment.result', { currency: 'USD' });
    await usdEur.waitFor(() => idsAt(usdEur).includes(usdAfterRefusal), 20000);

    writeFileSync(file, stringify({ targets: withFilter({ 'data.currency': 'GBP' }) }));
    expect(await reloader.reload({ principal: 'test' })).toMatchObject({ changed: ['usd-eur'] });
    const gbp = await notify('payment.result', { currency: 'GBP' });
    const usd = await notify('payment.result', { currency: 'USD' }, 'SUB-9');
    await everything.waitFor(() => [gbp, usd].every((id) => idsAt(everything).includes(id)), 20000);
    await usdEur.waitFor(() => idsAt(usdEur).includes(gbp), 20000);
    await new Promise((r) => setTimeout(r, 300));
    expect(idsAt(usdEur).slice(before)).toEqual([usdAfterRefusal, gbp]);
  });
});
