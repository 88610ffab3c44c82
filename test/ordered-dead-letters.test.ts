import { readFileSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { parse as parseYaml, stringify } from 'yaml';
import { runCli } from '../src/cli/run';
import { eventIdFor } from '../src/model/ids';
import { ADMIN_TEST_TOKEN, buildForwarding, waitUntil, type ForwardingHarness } from './support/forwarding-harness';
import { LogCapture } from './support/harness';
import { counterValue, scrapedValue } from './support/metric-value';
import { FakePlatform } from './support/platform';
import { TargetServer, type ReceivedRequest } from './support/target-server';
import { tempDir } from './support/temp-dir';

const platform = new FakePlatform();
const bearer = { authorization: `Bearer ${ADMIN_TEST_TOKEN}` };

/** The target's view of one request: the ordering key and step (from the body), and what it answered. */
function parse(r: ReceivedRequest): { key: string; step: number; ok: boolean; at: number; answeredAt: number } {
  const body = JSON.parse(r.body.toString('utf8')) as { data: { data: { request_id: string; step: number } } };
  return {
    key: body.data.data.request_id,
    step: body.data.data.step,
    ok: r.answered !== undefined && r.answered < 300,
    at: r.at,
    answeredAt: r.answeredAt ?? Infinity,
  };
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
  /** Runs the CLI against this world's Redis and targets; its audit lines go to `cliAudit`. */
  cli(...argv: string[]): Promise<{ code: number; lines: string[] }>;
  cliAudit: LogCapture;
  close(): Promise<void>;
}

async function startWorld(onDeadLetter: 'block' | 'skip', failing: string[]): Promise<World> {
  const failed = new Set(failing);
  const target = await TargetServer.start((_n, req) => {
    const { key, step } = parse(req);
    return { status: failed.has(`${key}:${step}`) ? 503 : 200 };
  });
  const targets = [
    {
      name: 'ledger',
      url: target.url,
      concurrency: 4,
      maxAttempts: 2,
      backoff: { initialMs: 20, maxMs: 50 },
      order: { key: 'data.request_id', onDeadLetter },
    },
    { name: 'plain', url: target.url, events: ['fx.result'] },
  ];
  const f = buildForwarding(platform, targets);
  const file = path.join(tempDir('ordered'), 'config.yaml');
  writeFileSync(file, stringify({ targets: targets.map((t) => ({ events: ['*'], ...t })) }));
  const cliAudit = new LogCapture();
  return {
    f,
    target,
    failing: failed,
    cliAudit,
    async cli(...argv) {
      const lines: string[] = [];
      const code = await runCli(argv, {
        env: { CONFIG_FILE: file, REDIS_URL: f.config.redisUrl, QUEUE_PREFIX: f.config.queuePrefix },
        out: (l) => lines.push(...l.split('\n')),
        log: cliAudit.stream,
      });
      return { code, lines };
    },
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
  return eventIdFor('payment.result', 'production', Buffer.from(body));
}

const requestsOf = (w: World, key: string) => w.target.requests.map(parse).filter((r) => r.key === key);
const deliveredSteps = (w: World, key: string) =>
  requestsOf(w, key)
    .filter((r) => r.ok)
    .map((r) => r.step);

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
  await waitUntil(
    async () => {
      for (const id of eventIds) {
        const job = await queue.getJob(id);
        if (!job || (await job.getState()) !== 'delayed' || (job.processedOn ?? 0) < woken) return false;
      }
      return true;
    },
    10000,
    'woken deliveries looked at and parked again',
  );
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

    expect(requestsOf(w, 'A').map((r) => [r.step, r.ok])).toEqual([
      [1, false],
      [1, false],
    ]); // A:1's two attempts, nothing after
    expect(deliveredSteps(w, 'B')).toEqual([1, 2, 3]); // the other key went on meanwhile
    expect(f.receiver.logs.find((l) => String(l.message).startsWith('ordered delivery blocked'))).toMatchObject({
      level: 'warn',
      target: 'ledger',
      orderKey: 'A',
      eventId: a1,
    });
    const listed = await request(f.admin).get('/admin/api/targets/ledger/blocked').set(bearer).expect(200);
    expect(listed.body).toEqual({
      target: 'ledger',
      ordered: true,
      blocked: [{ key: 'A', eventId: a1, since: expect.any(String), waiting: 3 }],
    });
    expect(Date.parse(listed.body.blocked[0].since)).toBeLessThanOrEqual(Date.now());
    const table = await w.cli('target', 'blocked', 'ledger');
    expect(table.code).toBe(0);
    expect(table.lines[0]).toMatch(/^KEY\s+EVENT ID\s+SINCE\s+WAITING$/);
    expect(table.lines.slice(2)).toEqual([`A    ${a1}  ${listed.body.blocked[0].since}  3`, '1 blocked key(s)']);
    await new Promise((r) => setTimeout(r, 600)); // the gauges are read at most every 500 ms
    const held = await gauges(f);
    expect(held.blocked).toBe(1);
    expect(held.oldest).toBeGreaterThan(0);
    // The example alert rule watches that series, by target: it would fire on this value.
    const rules = (
      parseYaml(readFileSync(path.join(__dirname, '../config/alerts.yml'), 'utf8')) as {
        groups: { rules: { alert: string; expr: string }[] }[];
      }
    ).groups.flatMap((g) => g.rules);
    expect(rules.find((r) => r.alert === 'WebhookOrderedKeysBlocked')?.expr).toBe(
      'max by (target) (webhook_ordering_blocked_keys) > 0',
    );

    w.failing.delete('A:1');
    const replayedAt = Date.now();
    const replay = await request(f.admin)
      .post('/admin/api/dead-letters/replay')
      .set(bearer)
      .send({ ids: [`ledger/${a1}`] })
      .expect(200);
    expect(replay.body).toEqual({ replayed: [`ledger/${a1}`], notFound: [] });
    // Promptly, not when the later ones' 120 s park would have run out.
    await waitUntil(() => deliveredSteps(w, 'A').length === 4, 10000, 'A delivered after the replay');

    expect(deliveredSteps(w, 'A')).toEqual([1, 2, 3, 4]);
    expectEachAfterThePrevious(w, 'A', [1, 2, 3, 4]);
    expect(Date.now() - replayedAt).toBeLessThan(10000);
    expect(requestsOf(w, 'B').every((r) => r.answeredAt < replayedAt)).toBe(true);
    expect(
      (await request(f.admin).get('/admin/api/targets/ledger/blocked').set(bearer).expect(200)).body.blocked,
    ).toEqual([]);
    await new Promise((r) => setTimeout(r, 600));
    expect(await gauges(f)).toEqual({ blocked: 0, oldest: 0 });
  }, 60000);

  it('lists blocked keys only with credentials, 404 for an unknown target, and none (ordered: false) for a target without order', async () => {
    w = await startWorld('block', []);
    const { f } = w;
    await request(f.admin).get('/admin/api/targets/ledger/blocked').expect(401);
    expect((await request(f.admin).get('/admin/api/targets/nope/blocked').set(bearer).expect(404)).body).toEqual({
      error: 'unknown_target',
      message: 'no target named "nope"',
    });
    expect((await request(f.admin).get('/admin/api/targets/plain/blocked').set(bearer).expect(200)).body).toEqual({
      target: 'plain',
      ordered: false,
      blocked: [],
    });
    expect((await request(f.admin).get('/admin/api/targets/ledger/blocked').set(bearer).expect(200)).body).toEqual({
      target: 'ledger',
      ordered: true,
      blocked: [],
    });
  });

  it('release: the later deliveries of the key go on in order, its dead letter stays, and the release is audited', async () => {
    const key = 'PAY/7 R'; // a key that needs URL-encoding in the path
    w = await startWorld('block', [`${key}:1`, 'S:1']);
    const { f } = w;
    const r1 = await notify(f, key, 1);
    for (let step = 2; step <= 3; step++) await notify(f, key, step);
    const s1 = await notify(f, 'S', 1);
    await notify(f, 'S', 2);
    await deadLettered(f, r1);
    await deadLettered(f, s1);
    const listed = (await request(f.admin).get('/admin/api/targets/ledger/blocked').set(bearer).expect(200)).body as {
      blocked: { key: string; waiting: number }[];
    };
    expect(listed.blocked.map((b) => [b.key, b.waiting]).sort()).toEqual([
      [key, 2],
      ['S', 1],
    ]);
    const release = (k: string, target = 'ledger') =>
      request(f.admin).post(`/admin/api/targets/${target}/blocked/${encodeURIComponent(k)}/release`);

    // A browser on another site may not release; nor may anyone without the credential.
    await release(key).expect(401);
    await release(key).set(bearer).set('sec-fetch-site', 'cross-site').expect(403);
    const released = await release(key).set(bearer).expect(200);
    expect(released.body).toEqual({ target: 'ledger', key, deadLetter: `ledger/${r1}` });
    await waitUntil(() => deliveredSteps(w, key).length === 2, 5000, 'the released key delivered');

    expect(deliveredSteps(w, key)).toEqual([2, 3]);
    expectEachAfterThePrevious(w, key, [2, 3]);
    expect(deliveredSteps(w, 'S')).toEqual([]); // the other blocked key stays held
    expect((await f.deadLetters.list({ target: 'ledger' })).map((d) => d.eventId).sort()).toEqual([r1, s1].sort());
    expect(
      (await request(f.admin).get('/admin/api/targets/ledger/blocked').set(bearer).expect(200)).body.blocked.map(
        (b: { key: string }) => b.key,
      ),
    ).toEqual(['S']);
    const audits = () => f.adminLogs.lines.filter((l) => l.audit === true && l.action === 'target.release');
    expect(audits()).toEqual([
      expect.objectContaining({
        message: 'admin action',
        principal: 'token',
        target: 'ledger',
        orderKey: key,
        items: [key],
        deadLetter: `ledger/${r1}`,
        at: expect.any(String),
      }),
    ]);

    // Refusals: no longer blocked, unknown target, a target without order; each one audited.
    expect((await release(key).set(bearer).expect(404)).body).toEqual({
      error: 'not_blocked',
      message: `key "${key}" of target "ledger" is not blocked`,
    });
    expect((await release('S', 'nope').set(bearer).expect(404)).body.error).toBe('unknown_target');
    expect((await release('S', 'plain').set(bearer).expect(409)).body).toEqual({
      error: 'not_ordered',
      message: 'target "plain" does not order its deliveries (no order in its settings)',
    });
    expect(
      audits()
        .slice(1)
        .map((l) => [l.target, l.refused]),
    ).toEqual([
      ['ledger', `key "${key}" of target "ledger" is not blocked`],
      ['nope', 'no target named "nope"'],
      ['plain', 'target "plain" does not order its deliveries (no order in its settings)'],
    ]);

    // The CLI: the same, audited as cli:<user>; a target without order has nothing to list.
    expect(await w.cli('target', 'blocked', 'plain')).toEqual({
      code: 0,
      lines: ['plain: no order in its settings, so no key can be blocked'],
    });
    expect(await w.cli('target', 'release', 'ledger', 'S')).toEqual({
      code: 0,
      lines: [`released  ledger key "S": its later deliveries go on; the dead letter ledger/${s1} stays`],
    });
    await waitUntil(() => deliveredSteps(w, 'S').length === 1, 5000, 'S released by the CLI');
    expect(deliveredSteps(w, 'S')).toEqual([2]);
    expect(await w.cli('target', 'release', 'ledger', 'S')).toEqual({
      code: 1,
      lines: ['not released  key "S" of target "ledger" is not blocked'],
    });
    const cliAudits = w.cliAudit.lines.filter((l) => l.audit === true && l.action === 'target.release');
    expect(cliAudits.map((l) => [l.principal, l.orderKey, l.deadLetter, l.refused])).toEqual([
      [`cli:${userInfo().username}`, 'S', `ledger/${s1}`, undefined],
      [`cli:${userInfo().username}`, 'S', undefined, 'key "S" of target "ledger" is not blocked'],
    ]);
    expect((await w.cli('target', 'blocked', 'ledger')).lines.at(-1)).toBe('0 blocked key(s)');

    // The dead letter kept by the release is delivered when replayed, outside the order (after 2 and 3).
    w.failing.delete(`${key}:1`);
    await request(f.admin)
      .post('/admin/api/dead-letters/replay')
      .set(bearer)
      .send({ ids: [`ledger/${r1}`] })
      .expect(200);
    await waitUntil(() => deliveredSteps(w, key).length === 3, 5000, 'the released dead letter delivered on replay');
    expect(deliveredSteps(w, key)).toEqual([2, 3, 1]);
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
    await waitUntil(
      () => deliveredSteps(w, 'D').length === 2,
      3000,
      'the next deliveries of the key, within 3 s of the discard',
    );

    expect(deliveredSteps(w, 'D')).toEqual([2, 3]);
    expectEachAfterThePrevious(w, 'D', [2, 3]);
    expect(
      Math.min(
        ...requestsOf(w, 'D')
          .filter((r) => r.step === 2)
          .map((r) => r.at),
      ),
    ).toBeGreaterThanOrEqual(discardedAt);
    expect(
      requestsOf(w, 'D')
        .filter((r) => r.step === 1)
        .every((r) => !r.ok),
    ).toBe(true); // never delivered
    expect(await stateOf(f, d1)).toBe('missing');
    expect(
      (await request(f.admin).get('/admin/api/targets/ledger/blocked').set(bearer).expect(200)).body.blocked,
    ).toEqual([]);
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

    expect(requestsOf(w, 'K').map((r) => [r.step, r.ok])).toEqual([
      [1, false],
      [1, false],
      [2, true],
      [3, true],
      [4, true],
    ]);
    const lastK1Answer = Math.max(
      ...requestsOf(w, 'K')
        .filter((r) => r.step === 1)
        .map((r) => r.answeredAt),
    );
    expect(
      Math.min(
        ...requestsOf(w, 'K')
          .filter((r) => r.step === 2)
          .map((r) => r.at),
      ),
    ).toBeGreaterThanOrEqual(lastK1Answer);
    expectEachAfterThePrevious(w, 'K', [2, 3, 4]);
    expect(await counterValue(f.metrics.orderingSkips, { target: 'ledger' })).toBe(1);
    const skips = f.receiver.logs.lines.filter((l) =>
      String(l.message).startsWith('ordered delivery skipped a dead letter'),
    );
    expect(skips).toEqual([expect.objectContaining({ level: 'warn', target: 'ledger', orderKey: 'K', eventId: k1 })]);
    expect((await f.deadLetters.list({ target: 'ledger' })).map((d) => d.eventId)).toEqual([k1]); // the dead letter itself stays
    await new Promise((r) => setTimeout(r, 600));
    expect(await gauges(f)).toEqual({ blocked: 0, oldest: 0 });
  }, 60000);
});
