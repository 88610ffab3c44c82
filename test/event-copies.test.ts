import request from 'supertest';
import { ownKeys } from '../src/model/names';
import { sampleBody } from '../src/signing/samples';
import { randomNonce, signLegacy } from '../src/signing/sign';
import { ADMIN_TEST_TOKEN, buildForwarding, type ForwardingHarness } from './support/forwarding-harness';
import { counterValue } from './support/metric-value';
import { FakePlatform } from './support/platform';
import { TargetServer } from './support/target-server';

const platform = new FakePlatform();
const MERCHANT_ID = 'M-COPIES-1';
const OPERATOR = { username: 'ops', password: 'correct horse battery' };
const bearer = { authorization: `Bearer ${ADMIN_TEST_TOKEN}` };

let f: ForwardingHarness;
let ledger: TargetServer;

beforeAll(async () => {
  ledger = await TargetServer.start();
  f = buildForwarding(platform, [{ name: 'ledger', url: ledger.url, events: ['payment.result'] }], {
    ADMIN_USER: OPERATOR.username,
    ADMIN_PASSWORD: OPERATOR.password,
    SIGNATURE_SCHEMES: 'current,legacy',
    MERCHANT_ID,
  });
});
afterAll(async () => {
  await f?.close();
  await ledger?.close();
});

const bodyOf = (requestId: string) =>
  JSON.stringify({ type: 'MERCH', data: { request_id: requestId, status: 'SUCCESS', amount: '3.00' } });

/** Sends a first notification and returns its event id, as the target received it. */
async function sendFirst(n: ReturnType<FakePlatform['signed']>): Promise<string> {
  const delivered = ledger.successes().length;
  await platform.send(f.receiver.app, n).expect(200);
  await ledger.waitFor(() => ledger.successes().length === delivered + 1);
  return String(ledger.successes().at(-1)!.headers['webhook-id']);
}

const eventView = async (eventId: string) =>
  (await request(f.admin).get(`/admin/api/events/${eventId}`).set(bearer).expect(200)).body as {
    copies?: { duplicates: number; replays: number; lastAt?: string };
  };
const outcomes = (outcome: string) => counterValue(f.metrics.notifications, { event_type: 'payment.result', outcome });

describe('copies of a notification after the first, counted on its event', () => {
  it('two duplicates (same body, new nonce) and one replayed nonce: the event view and the console page show 2 and 1, with when the last came', async () => {
    const body = bodyOf('PAY-COPIES-1');
    const first = platform.signed('payment.result', { body });
    const eventId = await sendFirst(first);
    // The first receipt leaves no copies hash behind: it writes nothing for copies.
    expect(await f.pipeline.redis.exists(ownKeys.copies(f.pipeline.prefix, eventId))).toBe(0);
    expect((await eventView(eventId)).copies).toEqual({ duplicates: 0, replays: 0 });

    const [duplicatesBefore, replaysBefore] = [await outcomes('duplicate'), await outcomes('replay')];
    const before = Date.now();
    await platform.send(f.receiver.app, platform.signed('payment.result', { body })).expect(200);
    await platform.send(f.receiver.app, platform.signed('payment.result', { body })).expect(200);
    await platform.send(f.receiver.app, first).expect(200);
    expect(await outcomes('duplicate')).toBe(duplicatesBefore + 2);
    expect(await outcomes('replay')).toBe(replaysBefore + 1);

    const view = await eventView(eventId);
    expect(view.copies).toEqual({
      duplicates: 2,
      replays: 1,
      lastAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    const lastAt = Date.parse(view.copies!.lastAt!);
    expect(lastAt).toBeGreaterThanOrEqual(before - 1000); // Redis's clock, on this machine
    expect(lastAt).toBeLessThanOrEqual(Date.now() + 1000);

    const page = await request(f.admin)
      .get(`/admin/console/events/${eventId}`)
      .auth(OPERATOR.username, OPERATOR.password)
      .expect(200);
    expect(page.text).toContain('<dt>Copies after the first</dt>');
    expect(page.text).toContain('2 duplicates, 1 repeat refused');
    expect(page.text).toContain(`the last at <time datetime="${view.copies!.lastAt}">`);

    // Still one delivery: the copies were counted, not queued.
    await new Promise((r) => setTimeout(r, 200));
    expect(ledger.successes().filter((r) => r.headers['webhook-id'] === eventId)).toHaveLength(1);
  });

  it("the copies hash expires with the event's de-duplication record", async () => {
    const body = bodyOf('PAY-COPIES-TTL');
    const eventId = await sendFirst(platform.signed('payment.result', { body }));
    await platform.send(f.receiver.app, platform.signed('payment.result', { body })).expect(200);

    const record = await f.pipeline.redis.pttl(ownKeys.dedup(f.pipeline.prefix, eventId));
    const copies = await f.pipeline.redis.pttl(ownKeys.copies(f.pipeline.prefix, eventId));
    expect(record).toBeGreaterThan(f.config.dedupWindowMs - 10000);
    expect(copies).toBeGreaterThan(record - 5000);
    expect(copies).toBeLessThanOrEqual(record);
  });

  it("a replay of a duplicate's nonce is counted too: the duplicate bound its nonce to the same event", async () => {
    const body = bodyOf('PAY-COPIES-DUP-NONCE');
    const eventId = await sendFirst(platform.signed('payment.result', { body }));
    const duplicate = platform.signed('payment.result', { body });
    await platform.send(f.receiver.app, duplicate).expect(200);
    await platform.send(f.receiver.app, duplicate).expect(200);
    expect((await eventView(eventId)).copies).toMatchObject({ duplicates: 1, replays: 1 });
  });

  it('a nonce seen before carrying another body is refused as a replay and counted on neither event', async () => {
    const nonce = randomNonce();
    const firstId = await sendFirst(platform.signed('payment.result', { body: bodyOf('PAY-COPIES-A'), nonce }));
    const otherBody = bodyOf('PAY-COPIES-B');
    const otherId = await sendFirst(platform.signed('payment.result', { body: otherBody }));
    const replaysBefore = await outcomes('replay');

    // The first event's nonce over the other event's body: a replay key that belongs to another event.
    await platform.send(f.receiver.app, platform.signed('payment.result', { body: otherBody, nonce })).expect(200);

    expect(await outcomes('replay')).toBe(replaysBefore + 1);
    expect((await eventView(firstId)).copies).toEqual({ duplicates: 0, replays: 0 });
    expect((await eventView(otherId)).copies).toEqual({ duplicates: 0, replays: 0 });
  });

  it('a legacy-scheme notification sent again (the same signature) is counted as a replay of its event', async () => {
    const timestamp = Date.now();
    // The legacy scheme's signed string takes its timestamp from the body too.
    const body = Buffer.from(sampleBody('payment.result', { timestamp }));
    const n = {
      target: '/api/v2/merch/pay/notify',
      body,
      headers: {
        'content-type': 'application/json',
        ...signLegacy(platform.keys.privateKeyPem, MERCHANT_ID, timestamp, body),
      },
    };
    const eventId = await sendFirst(n);
    await platform.send(f.receiver.app, n).expect(200);
    expect((await eventView(eventId)).copies).toMatchObject({ duplicates: 0, replays: 1 });
  });
});
