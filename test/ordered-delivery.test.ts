import { eventIdFor } from '../src/model/ids';
import { ownKeys } from '../src/model/names';
import { keyDigest } from '../src/routing/ordering-key';
import { buildForwarding, waitUntil, type ForwardingHarness } from './support/forwarding-harness';
import { FakePlatform } from './support/platform';
import { TargetServer, type ReceivedRequest } from './support/target-server';

const platform = new FakePlatform();

/** The target's view of one request: the ordering key and the step (from the body), and what it answered. */
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

async function notify(f: ForwardingHarness, key: string, step: number): Promise<string> {
  const body = JSON.stringify({ type: 'PAY', data: { request_id: key, step, status: `S${step}` } });
  await platform.send(f.receiver.app, platform.signed('payment.result', { body })).expect(200);
  return eventIdFor('payment.result', 'production', Buffer.from(body));
}

describe('ordered delivery in one process', () => {
  let target: TargetServer;
  let f: ForwardingHarness;
  afterEach(async () => {
    await f.close();
    await target.close();
  });

  it('delivers each key in receipt order, one at a time, through failures and retries, keys in parallel', async () => {
    // About one answer in six fails; answers take 0-20 ms.
    let seed = 7;
    const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    target = await TargetServer.start(() => ({
      status: random() < 0.17 ? 503 : 200,
      delayMs: Math.floor(random() * 20),
    }));
    f = buildForwarding(platform, [
      {
        name: 'ledger',
        url: target.url,
        concurrency: 8,
        maxAttempts: 20,
        backoff: { initialMs: 20, maxMs: 100 },
        order: { key: 'data.request_id' },
      },
    ]);
    const keys = Array.from({ length: 10 }, (_, i) => `ORD-${i}`);
    // Each key's next notification is sent once the previous one was answered 200; keys interleave.
    await Promise.all(
      keys.map(async (key) => {
        for (let step = 1; step <= 5; step++) await notify(f, key, step);
      }),
    );
    await waitUntil(
      () => new Set(target.successes().map((r) => r.headers['webhook-id'])).size >= 50,
      30000,
      'all 50 delivered',
    );

    const seen = target.requests.map(parse);
    for (const key of keys) {
      const mine = seen.filter((r) => r.key === key);
      // A 2xx that came after our timeout is delivered again at once (at least once): an immediate
      // repeat of the same step is not out of order.
      const delivered = mine
        .filter((r) => r.ok)
        .map((r) => r.step)
        .filter((step, i, all) => step !== all[i - 1]);
      expect(delivered).toEqual([1, 2, 3, 4, 5]);
      // No step was attempted before the one before it succeeded.
      for (let step = 2; step <= 5; step++) {
        const firstTry = Math.min(...mine.filter((r) => r.step === step).map((r) => r.at));
        const previousSuccess = mine.find((r) => r.step === step - 1 && r.ok)!;
        expect(firstTry).toBeGreaterThanOrEqual(previousSuccess.answeredAt);
      }
    }
    expect(target.maxInFlight).toBeGreaterThan(1); // keys went in parallel
    // Every sequence is done and gone.
    for (const key of keys)
      expect(await f.receiver.redis.exists(ownKeys.orderSequence(f.pipeline.prefix, 'ledger', keyDigest(key)))).toBe(0);
  }, 60000);
});
