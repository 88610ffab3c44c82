import request from 'supertest';
import { eventIdFor } from '../src/pipeline/ids';
import { ADMIN_TEST_TOKEN, buildForwarding, waitUntil, type ForwardingHarness } from './support/forwarding-harness';
import { counterValue, scrapedValue } from './support/metric-value';
import { FakePlatform } from './support/platform';
import { TargetServer, type ReceivedRequest } from './support/target-server';

const platform = new FakePlatform();
const bearer = { authorization: `Bearer ${ADMIN_TEST_TOKEN}` };

/** The target's view of one request: the ordering key and step (from the body), and what it answered. */
function parse(r: ReceivedRequest): { key: string; step: number; ok: boolean; at: number; answeredAt: number } {
  const body = JSON.parse(r.body.toString('utf8')) as { data: { data: { request_id: string; step: number } } };
  return { key: body.data.data.request_id, step: body.data.data.step, ok: r.answered !== undefined && r.answered < 300, at: r.at, answeredAt: r.answeredAt ?? Infinity };
}

/**
 * One test's world: an ordered target `ledger` (a real local server answering 503 to the deliveries
 * named in `failing`, `<key>:<step>`, and 200 to the rest; two attempts, backoff in milliseconds),
 * and a target `plain` without `order` that takes no payment events.
 */
interface World {
  f: ForwardingHarness;
  target: TargetServer;
  failing: Set<string>;
  close(): Promise<void>;
}

async function startWorld(onDeadLetter: 'block' | 'skip', failing: string[]): Promise<World> {
  const failed = new Set(failing);
  const target = await TargetServer.start((_n, req) => {
    const { key, step } = parse(req);
    return { status: failed.has(`${key}:${step}`) ? 503 : 200 };
  });
  const f = buildForwarding(platform, [
    { name: 'ledger', url: target.url, concurrency: 4, maxAttempts: 2, backoff: { initialMs: 20, maxMs: 50 }, order: { key: 'data.request_id', onDeadLetter } },
    { name: 'plain', url: target.url, events: ['fx.result'] },
  ]);
  return {
    f,
    target,
    failing: failed,
    async close() {
      await f.close();
      await target.close();
    },
  };
}

/** Sends one notification for the key's step; resolves once it was acknowledged 200, with its event id. */
async function notify(f: ForwardingHarness, key: string, step: number): Promise<string> {
  const body = JSON.stringify({ type: 'PAY', data: { request_id: key, step, status: `S${step}` } });
  await platform.send(f.receiver.app, platform.signed('payment.result', { body })).expect(200);
  return eventIdFor('payment.result', undefined, Buffer.from(body));
}

const requestsOf = (w: World, key: string) => w.target.requests.map(parse).filter((r) => r.key === key);
const deliveredSteps = (w: World, key: string) => requestsOf(w, key).filter((r) => r.ok).map((r) => r.step);

async function stateOf(f: ForwardingHarness, eventId: string): Promise<string> {
  const job = await f.pipeline.deliveryQueue('ledger')!.getJob(eventId);
  return job ? job.getState() : 'missing';
}

async function deadLettered(f: ForwardingHarness, eventId: string): Promise<void> {
  await waitUntil(async () => (await stateOf(f, eventId)) === 'failed', 10000, `${eventId} dead-lettered`);
}

/**
 * Wakes parked deliveries now, as their own timer would later, and waits until the worker has looked
 * at each (processed after the wake) and parked it again. Without this a test would see only that
 * they were still asleep.
 */
async function wakeAndReparked(f: ForwardingHarness, eventIds: string[]): Promise<void> {
  const queue = f.pipeline.deliveryQueue('ledger')!;
  const woken = Date.now();
  for (const id of eventIds) await (await queue.getJob(id))!.promote();
  await waitUntil(async () => {
    for (const id of eventIds) {
      const job = await queue.getJob(id);
      if (!job || (await job.getState()) !== 'delayed' || (job.processedOn ?? 0) < woken) return false;
    }
    return true;
  }, 10000, 'woken deliveries looked at and parked again');
  for (const id of eventIds) expect((await queue.getJob(id))!.attemptsMade).toBe(0); // parking spends no attempt
}

/** Each step of the key was first attempted only after the step before it was answered 2xx. */
function expectEachAfterThePrevious(w: World, key: string, steps: number[]): void {
  const mine = requestsOf(w, key);
  for (let i = 1; i < steps.length; i++) {
    const firstTry = Math.min(...mine.filter((r) => r.step === steps[i]).map((r) => r.at));
    const previous = mine.find((r) => r.step === steps[i - 1] && r.ok)!;
    expect(firstTry).toBeGreaterThanOrEqual(previous.answeredAt);
  }
}

async function gauges(f: ForwardingHarness): Promise<{ blocked?: number; oldest?: number }> {
  const text = (await request(f.admin).get('/metrics').set(bearer).expect(200)).text;
  return {
    blocked: scrapedValue(text, 'webhook_ordering_blocked_keys', { target: 'ledger' }),
    oldest: scrapedValue(text, 'webhook_ordering_oldest_blocked_seconds', { target: 'ledger' }),
  };
}

let w: World;
afterEach(async () => {
  await w.close();
});

describe('onDeadLetter: block', () => {
  it('holds back a key behind its dead letter, reports it in the gauges, and after a replay delivers it and then the rest in order', async () => {
    w = await startWorld('block', ['A:1']);
    const { f } = w;
    const a1 = await notify(f, 'A', 1);
    // The later steps of A are sent after A:1 was acknowledged; another key's interleave with them.
    const laterA: string[] = [];
    for (let step = 2; step <= 4; step++) {
      laterA.push(await notify(f, 'A', step));
      await notify(f, 'B', step - 1);
    }
    await deadLettered(f, a1);
    await w.target.waitFor(() => deliveredSteps(w, 'B').length === 3);
    await wakeAndReparked(f, laterA);

    expect(requestsOf(w, 'A').map((r) => [r.step, r.ok])).toEqual([[1, false], [1, false]]); // A:1's two attempts, nothing after
    expect(deliveredSteps(w, 'B')).toEqual([1, 2, 3]); // the other key went on meanwhile
    expect(f.receiver.logs.find((l) => String(l.message).startsWith('ordered delivery blocked'))).toMatchObject({ level: 'warn', target: 'ledger', orderKey: 'A', eventId: a1 });
    await new Promise((r) => setTimeout(r, 600)); // the gauges are read at most every 500 ms
    const held = await gauges(f);
    expect(held.blocked).toBe(1);
    expect(held.oldest).toBeGreaterThan(0);

    w.failing.delete('A:1');
    const replayedAt = Date.now();
    const replay = await request(f.admin).post('/admin/api/dead-letters/replay').set(bearer).send({ ids: [`ledger/${a1}`] }).expect(200);
    expect(replay.body).toEqual({ replayed: [`ledger/${a1}`], notFound: [] });
    // Promptly, not when the later ones' 120 s park would have run out.
    await waitUntil(() => deliveredSteps(w, 'A').length === 4, 10000, 'A delivered after the replay');

    expect(deliveredSteps(w, 'A')).toEqual([1, 2, 3, 4]);
    expectEachAfterThePrevious(w, 'A', [1, 2, 3, 4]);
    expect(Date.now() - replayedAt).toBeLessThan(10000);
    expect(requestsOf(w, 'B').every((r) => r.answeredAt < replayedAt)).toBe(true);
    await new Promise((r) => setTimeout(r, 600));
    expect(await gauges(f)).toEqual({ blocked: 0, oldest: 0 });
  }, 60000);

  it('discard: discarding the dead letter at the head of a key lets the next delivery go at once', async () => {
    w = await startWorld('block', ['D:1']);
    const { f } = w;
    const d1 = await notify(f, 'D', 1);
    const later = [await notify(f, 'D', 2), await notify(f, 'D', 3)];
    await deadLettered(f, d1);
    await wakeAndReparked(f, later); // now parked behind the dead letter, for 120 s

    const discardedAt = Date.now();
    await request(f.admin).delete(`/admin/api/dead-letters/ledger/${d1}`).set(bearer).expect(200);
    await waitUntil(() => deliveredSteps(w, 'D').length === 2, 3000, 'the next deliveries of the key, within 3 s of the discard');

    expect(deliveredSteps(w, 'D')).toEqual([2, 3]);
    expectEachAfterThePrevious(w, 'D', [2, 3]);
    expect(Math.min(...requestsOf(w, 'D').filter((r) => r.step === 2).map((r) => r.at))).toBeGreaterThanOrEqual(discardedAt);
    expect(requestsOf(w, 'D').filter((r) => r.step === 1).every((r) => !r.ok)).toBe(true); // never delivered
    expect(await stateOf(f, d1)).toBe('missing');
    expect(await f.pipeline.ordering('ledger')!.blocked()).toEqual([]);
  }, 60000);
});

describe('onDeadLetter: skip', () => {
  it('delivers the later deliveries of the key right after its dead letter, in order, and counts and logs the skip', async () => {
    w = await startWorld('skip', ['K:1']);
    const { f } = w;
    const k1 = await notify(f, 'K', 1);
    for (let step = 2; step <= 4; step++) await notify(f, 'K', step);
    await deadLettered(f, k1);
    await waitUntil(() => deliveredSteps(w, 'K').length === 3, 5000, 'the later steps delivered');

    expect(requestsOf(w, 'K').map((r) => [r.step, r.ok])).toEqual([[1, false], [1, false], [2, true], [3, true], [4, true]]);
    const lastK1Answer = Math.max(...requestsOf(w, 'K').filter((r) => r.step === 1).map((r) => r.answeredAt));
    expect(Math.min(...requestsOf(w, 'K').filter((r) => r.step === 2).map((r) => r.at))).toBeGreaterThanOrEqual(lastK1Answer);
    expectEachAfterThePrevious(w, 'K', [2, 3, 4]);
    expect(await counterValue(f.metrics.orderingSkips, { target: 'ledger' })).toBe(1);
    const skips = f.receiver.logs.lines.filter((l) => String(l.message).startsWith('ordered delivery skipped a dead letter'));
    expect(skips).toEqual([expect.objectContaining({ level: 'warn', target: 'ledger', orderKey: 'K', eventId: k1 })]);
    expect((await f.deadLetters.list({ target: 'ledger' })).map((d) => d.eventId)).toEqual([k1]); // the dead letter itself stays
    await new Promise((r) => setTimeout(r, 600));
    expect(await gauges(f)).toEqual({ blocked: 0, oldest: 0 });
  }, 60000);
});
