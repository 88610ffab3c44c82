import request from 'supertest';
import { ADMIN_TEST_TOKEN, buildForwarding, waitUntil, type ForwardingHarness } from './support/forwarding-harness';
import { FakePlatform } from './support/platform';
import { TargetServer } from './support/target-server';

const platform = new FakePlatform();
const bearer = { authorization: `Bearer ${ADMIN_TEST_TOKEN}` };
let f: ForwardingHarness;
let good: TargetServer;
let bad: TargetServer;

/** One sample's value from Prometheus text, or undefined when the series is absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const match = /^([a-z_:]+)(?:\{(.*)\})? (.+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(match[3]);
  }
  return undefined;
}

beforeAll(async () => {
  good = await TargetServer.start();
  bad = await TargetServer.start(() => ({ status: 400 }));
  f = buildForwarding(platform, [
    { name: 'good', url: good.url, events: ['payment.result'] },
    { name: 'bad', url: bad.url, events: ['payment.result'] },
  ]);

  // The scripted run: 2 accepted, 1 replay, 1 duplicate, 2 rejected, 1 quarantined;
  // the good target gets 2 deliveries and the bad one 2 dead letters.
  const first = platform.signed('payment.result', { body: '{"type":"MERCH","data":{"n":1}}' });
  await platform.send(f.receiver.app, first).expect(200);
  await platform
    .send(f.receiver.app, platform.signed('payment.result', { body: '{"type":"MERCH","data":{"n":2}}' }))
    .expect(200);
  await platform.send(f.receiver.app, first).expect(200);
  await platform
    .send(f.receiver.app, platform.signed('payment.result', { body: '{"type":"MERCH","data":{"n":1}}' }))
    .expect(200);
  await platform.send(f.receiver.app, { ...first, body: Buffer.from('{"type":"MERCH","data":{"n":9}}') }).expect(401);
  await platform
    .send(f.receiver.app, platform.signed('payment.result', { timestamp: Date.now() - 600_000 }))
    .expect(401);
  await platform.send(f.receiver.app, platform.signed('fx.result', { body: 'not json' })).expect(200);
  await good.waitFor(() => good.successes().length === 2);
  await waitUntil(async () => (await f.deadLetters.list({ target: 'bad' })).length === 2, 5000, 'two dead letters');
});
afterAll(async () => {
  await f.close();
  await good.close();
  await bad.close();
});

describe('/metrics after a scripted run', () => {
  let text: string;
  beforeAll(async () => {
    text = (
      await request(f.admin)
        .get('/metrics')
        .set(bearer)
        .expect(200)
        .expect('content-type', /text\/plain/)
    ).text;
  });

  it('counts notifications by event type and outcome', () => {
    const n = (labels: Record<string, string>) => sample(text, 'webhook_notifications_total', labels);
    expect(n({ event_type: 'payment.result', outcome: 'accepted' })).toBe(2);
    expect(n({ event_type: 'payment.result', outcome: 'replay' })).toBe(1);
    expect(n({ event_type: 'payment.result', outcome: 'duplicate' })).toBe(1);
    expect(n({ event_type: 'payment.result', outcome: 'rejected', reason: 'bad_signature' })).toBe(1);
    expect(n({ event_type: 'payment.result', outcome: 'rejected', reason: 'timestamp_outside_window' })).toBe(1);
    expect(n({ event_type: 'fx.result', outcome: 'quarantined' })).toBe(1);
    expect(n({ event_type: 'onboarding.result', outcome: 'accepted' })).toBe(0);
  });

  it('has the acknowledgement latency histogram and enqueue failures', () => {
    expect(
      sample(text, 'webhook_ack_latency_seconds_count', { event_type: 'payment.result', outcome: 'accepted' }),
    ).toBe(2);
    expect(
      sample(text, 'webhook_ack_latency_seconds_bucket', {
        event_type: 'payment.result',
        outcome: 'accepted',
        le: '+Inf',
      }),
    ).toBe(2);
    expect(sample(text, 'webhook_enqueue_failures_total', { event_type: 'payment.result' })).toBe(0);
  });

  it('shows queue depth by queue and state, and the oldest waiting job', () => {
    expect(sample(text, 'webhook_queue_jobs', { queue: 'deliver.bad', state: 'failed' })).toBe(2);
    expect(sample(text, 'webhook_queue_jobs', { queue: 'quarantine', state: 'waiting' })).toBe(1);
    expect(sample(text, 'webhook_queue_oldest_waiting_seconds', { queue: 'quarantine' })).toBeGreaterThan(0);
    expect(sample(text, 'webhook_queue_oldest_waiting_seconds', { queue: 'deliver.good' })).toBe(0);
  });

  it('counts deliveries, their latency from receipt, and dead letters by target', () => {
    expect(sample(text, 'webhook_deliveries_total', { target: 'good', outcome: 'delivered' })).toBe(2);
    expect(sample(text, 'webhook_deliveries_total', { target: 'bad', outcome: 'dead_lettered' })).toBe(2);
    expect(sample(text, 'webhook_delivery_latency_seconds_count', { target: 'good' })).toBe(2);
    expect(sample(text, 'webhook_dead_letters_total', { target: 'bad' })).toBe(2);
  });

  it('reports the Redis connection and durability risks (the test Redis persists nothing)', () => {
    expect(sample(text, 'webhook_redis_up')).toBe(1);
    expect(sample(text, 'webhook_redis_durability_risk', { risk: 'no_persistence' })).toBe(1);
    expect(sample(text, 'webhook_redis_durability_risk', { risk: 'eviction_policy' })).toBe(0);
    expect(f.adminLogs.find((l) => /Redis can lose acknowledged events/.test(String(l.message)))).toBeDefined();
  });

  it('includes the default process metrics', () => {
    expect(sample(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
  });
});
