import type { DeliveryJob } from '../src/model/jobs';
import { buildForwarding, waitUntil, type ForwardingHarness } from './support/forwarding-harness';
import { counterValue } from './support/metric-value';
import { FakePlatform } from './support/platform';
import { TargetServer } from './support/target-server';

// The clock in delivery: the first call of an idle thread stuck inside one built-in, and a thrown value
// whose getter loops, dead-letter as timeouts (after one retry on a fresh thread, inside one BullMQ
// attempt); the next event of the same target is answered; an async transform is never delivered.
jest.setTimeout(180000);

const platform = new FakePlatform();
const source = (body: string) =>
  `function transform(event) {\n  if (event.type !== 'payment.result') return null;\n  ${body}\n}`;
const CASES: Record<string, { transform: string; error: string }> = {
  builtin: {
    transform: source("return { found: 'a'.repeat(2e6).indexOf('a'.repeat(2000) + 'b') };"),
    error: 'transform_error: timed out after 50 ms (inline:builtin)',
  },
  getter: {
    transform: source('throw { get message() { for (;;) {} } };'),
    error: 'transform_error: timed out after 50 ms (inline:getter)',
  },
  async: {
    transform: source('return (async () => ({ ok: 1 }))();'),
    error:
      'transform_error: TypeError: not JSON: the result is a Promise or another thenable (a transform is not async) (inline:async)',
  },
};

let f: ForwardingHarness;
let target: TargetServer;
beforeAll(async () => {
  target = await TargetServer.start();
  f = buildForwarding(
    platform,
    Object.entries(CASES).map(([name, c]) => ({ name, url: target.url, transform: c.transform, maxAttempts: 5 })),
  );
});
afterAll(async () => {
  await f.close();
  await target.close();
});

it('dead-letters each with its transform_error at the first attempt, sends nothing, and answers the next event', async () => {
  const n = platform.signed('payment.result');
  await waitUntil(
    async () => (await f.platform.send(f.receiver.app, n)).status === 200,
    30000,
    'the notification acknowledged',
  );
  for (const [name, c] of Object.entries(CASES)) {
    const queue = f.pipeline.deliveryQueue(name)!;
    await waitUntil(async () => (await queue.getFailedCount()) === 1, 60000, `${name} dead-lettered`);
    const [job] = await queue.getFailed();
    expect({ name, attempts: job!.attemptsMade, failure: (job!.data as DeliveryJob).lastFailure }).toMatchObject({
      name,
      attempts: 1,
      failure: { errorClass: 'transform_error', error: c.error },
    });
  }
  expect(target.requests).toHaveLength(0);

  await f.platform.send(f.receiver.app, platform.signed('settlement.result')).expect(200);
  for (const name of Object.keys(CASES))
    await waitUntil(
      async () =>
        (await counterValue(f.metrics.deliveries, {
          target: name,
          event_type: 'settlement.result',
          outcome: 'dropped',
        })) === 1,
      60000,
      `${name} answers the next event`,
    );
});
