import { DEFAULT_TRANSFORM_MAX_BYTES } from '../src/transform/sandbox';
import { buildForwarding, waitUntil, type ForwardingHarness } from './support/forwarding-harness';
import { FakePlatform } from './support/platform';
import { TargetServer } from './support/target-server';

// A transform's result is capped (transformMaxBytes) inside the sandbox: twelve events whose transform
// returns 15 MB each, for a target that takes 4 s to answer, fail as transform errors without the
// results ever reaching the service's heap, and the process stays inside its memory bound.
jest.setTimeout(120000);

const MB = 1024 * 1024;
/** docs/transformations.md: a sandbox thread at most (its QuickJS heap, its V8 heap, the thread). */
const THREAD_BOUND = 100 * MB;
const CONCURRENCY = 10;

const platform = new FakePlatform();
let f: ForwardingHarness;
let slow: TargetServer;

beforeAll(async () => {
  slow = await TargetServer.start(() => ({ status: 200, delayMs: 4000 }));
  f = buildForwarding(platform, [
    {
      name: 'huge',
      url: slow.url,
      concurrency: CONCURRENCY,
      transformTimeoutMs: 1000,
      transform: 'function transform(event) { return { id: event.id, pad: "x".repeat(15e6) }; }',
    },
  ]);
});
afterAll(async () => {
  await f.close();
  await slow.close();
});

it('twelve 15 MB results dead-letter as transform_error, nothing is sent, and RSS stays inside the bound', async () => {
  const rss = () => process.memoryUsage().rss;
  const before = rss();
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rss())), 20);
  try {
    for (let i = 0; i < 12; i++)
      await f.platform
        .send(
          f.receiver.app,
          f.platform.signed('payment.result', {
            body: `{"type":"MERCH","data":{"request_id":"REQ-${i}","amount":1.00}}`,
          }),
        )
        .expect(200);
    const queue = f.pipeline.deliveryQueue('huge')!;
    await waitUntil(async () => (await queue.getFailedCount()) === 12, 90000, 'twelve dead letters');
    for (const job of await queue.getFailed())
      expect(job.data.lastFailure).toMatchObject({
        errorClass: 'transform_error',
        error: 'transform_error: TypeError: the result is larger than 1048576 bytes (inline:huge)',
      });
  } finally {
    clearInterval(sampler);
  }
  expect(slow.requests).toHaveLength(0);
  // One sandbox thread, and at most `concurrency` results of the cap in flight (each held a few times over).
  const bound = THREAD_BOUND + CONCURRENCY * 4 * DEFAULT_TRANSFORM_MAX_BYTES;
  process.stdout.write(
    `RSS before ${(before / MB).toFixed(0)} MB, peak ${(peak / MB).toFixed(0)} MB (bound +${bound / MB} MB)\n`,
  );
  expect(peak - before).toBeLessThan(bound);
});
