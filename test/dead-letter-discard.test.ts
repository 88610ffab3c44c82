import { writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { stringify } from 'yaml';
import { runCli } from '../src/cli/run';
import { eventIdFor } from '../src/model/ids';
import { ADMIN_TEST_TOKEN, buildForwarding, waitUntil, type ForwardingHarness } from './support/forwarding-harness';
import { LogCapture } from './support/harness';
import { FakePlatform } from './support/platform';
import { TargetServer } from './support/target-server';
import { tempDir } from './support/temp-dir';

const platform = new FakePlatform();
let f: ForwardingHarness;
let erp: TargetServer;
const [first, second, delivered] = ['first', 'second', 'delivered'].map(
  (name) => `{"type":"MERCH","data":{"case":"${name}"}}`,
) as [string, string, string];
const idOf = (body: string) => eventIdFor('payment.result', 'production', Buffer.from(body));

beforeAll(async () => {
  // A permanent refusal (400) dead-letters at once; the delivered case is answered 200.
  erp = await TargetServer.start((_n, req) => ({ status: req.body.toString().includes('"delivered"') ? 200 : 400 }));
  f = buildForwarding(platform, [{ name: 'erp', url: erp.url }]);
  for (const body of [first, second, delivered])
    await platform.send(f.receiver.app, platform.signed('payment.result', { body })).expect(200);
  await waitUntil(async () => (await f.deadLetters.list()).length === 2, 10000, 'two dead letters');
  await erp.waitFor(() => erp.successes().length === 1);
});
afterAll(async () => {
  await f.close();
  await erp.close();
});

const discard = (target: string, eventId: string) =>
  request(f.admin).delete(`/admin/api/dead-letters/${target}/${eventId}`);
const discardLines = (logs: LogCapture) =>
  logs.lines.filter((l) => l.audit === true && l.action === 'dead-letters.discard');

describe('discarding a dead letter through the admin API', () => {
  it('needs credentials, and refuses a cross-site browser', async () => {
    await discard('erp', idOf(first)).expect(401);
    await discard('erp', idOf(first))
      .set('authorization', `Bearer ${ADMIN_TEST_TOKEN}`)
      .set('sec-fetch-site', 'cross-site')
      .expect(403);
    expect(await f.pipeline.deliveryQueue('erp')!.getJob(idOf(first))).toBeDefined();
  });

  it('removes the failed delivery, answers what it was, and writes an audit line', async () => {
    const res = await discard('erp', idOf(first)).set('authorization', `Bearer ${ADMIN_TEST_TOKEN}`).expect(200);

    expect(res.body.discarded).toMatchObject({
      id: `erp/${idOf(first)}`,
      target: 'erp',
      eventId: idOf(first),
      eventType: 'payment.result',
      attempts: 1,
      lastFailure: { status: 400 },
    });
    expect(await f.pipeline.deliveryQueue('erp')!.getJob(idOf(first))).toBeUndefined();
    expect((await f.deadLetters.list()).map((d) => d.eventId)).toEqual([idOf(second)]);
    expect(discardLines(f.adminLogs)).toEqual([
      expect.objectContaining({
        message: 'admin action',
        principal: 'token',
        target: 'erp',
        items: [`erp/${idOf(first)}`],
        eventType: 'payment.result',
        attempts: 1,
        at: expect.any(String),
      }),
    ]);
    await new Promise((r) => setTimeout(r, 300));
    expect(erp.requests.filter((r) => r.headers['webhook-id'] === idOf(first))).toHaveLength(1); // never attempted again
    // It was the only job holding the event: the event view no longer finds it, and a resend has no body.
    await request(f.admin)
      .get(`/admin/api/events/${idOf(first)}`)
      .set('authorization', `Bearer ${ADMIN_TEST_TOKEN}`)
      .expect(404);
    await request(f.admin)
      .post(`/admin/api/events/${idOf(first)}/resend`)
      .set('authorization', `Bearer ${ADMIN_TEST_TOKEN}`)
      .send({})
      .expect(410);
  });

  it('answers 404 when there is no such dead letter or target, and 409 for a delivery that did not fail; each refusal is audited', async () => {
    const auth = { authorization: `Bearer ${ADMIN_TEST_TOKEN}` };
    expect((await discard('erp', idOf(first)).set(auth).expect(404)).body).toEqual({
      error: 'not_found',
      message: `no dead letter erp/${idOf(first)}`,
    });
    expect((await discard('nope', idOf(second)).set(auth).expect(404)).body).toMatchObject({ error: 'unknown_target' });
    const conflict = await discard('erp', idOf(delivered)).set(auth).expect(409);
    expect(conflict.body).toEqual({
      error: 'not_failed',
      state: 'completed',
      message: `erp/${idOf(delivered)} is not a dead letter: its delivery is completed`,
    });
    expect(await (await f.pipeline.deliveryQueue('erp')!.getJob(idOf(delivered)))!.getState()).toBe('completed');
    expect(
      discardLines(f.adminLogs)
        .slice(1)
        .map((l) => [l.items, l.refused]),
    ).toEqual([
      [[`erp/${idOf(first)}`], `no dead letter erp/${idOf(first)}`],
      [[`nope/${idOf(second)}`], 'no target named "nope"'],
      [[`erp/${idOf(delivered)}`], `erp/${idOf(delivered)} is not a dead letter: its delivery is completed`],
    ]);
  });
});

describe('dlq discard in the CLI', () => {
  it('discards the named dead letters, says which were not, exits 1 if any was not, and audits as cli:<user>', async () => {
    const file = path.join(tempDir('discard'), 'config.yaml');
    writeFileSync(file, stringify({ targets: [{ name: 'erp', url: erp.url, events: ['*'] }] }));
    const lines: string[] = [];
    const audit = new LogCapture();
    const code = await runCli(
      ['dlq', 'discard', `erp/${idOf(second)}`, `erp/${idOf(delivered)}`, 'erp/evt_nope', 'no-slash'],
      {
        env: { CONFIG_FILE: file, REDIS_URL: f.config.redisUrl, QUEUE_PREFIX: f.config.queuePrefix },
        out: (l) => lines.push(l),
        log: audit.stream,
      },
    );

    expect(code).toBe(1);
    expect(lines).toEqual([
      `discarded  erp/${idOf(second)}`,
      `not failed erp/${idOf(delivered)}  (its delivery is completed)`,
      'not found  erp/evt_nope  (no dead letter erp/evt_nope)',
      'not found  no-slash  (give <target>/<event id>)',
    ]);
    expect(await f.deadLetters.list()).toEqual([]);
    expect(discardLines(audit).map((l) => [l.principal, l.items, l.refused])).toEqual([
      [`cli:${userInfo().username}`, [`erp/${idOf(second)}`], undefined],
      [
        `cli:${userInfo().username}`,
        [`erp/${idOf(delivered)}`],
        `erp/${idOf(delivered)} is not a dead letter: its delivery is completed`,
      ],
      [`cli:${userInfo().username}`, ['erp/evt_nope'], 'no dead letter erp/evt_nope'],
    ]);
  });
});
