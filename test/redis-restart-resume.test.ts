import { buildForwarding, type ForwardingHarness } from './support/forwarding-harness';
import { FakePlatform } from './support/platform';
import { RedisServer } from './support/redis-server';
import { TargetServer } from './support/target-server';
import { tempDir } from './support/temp-dir';

// Redis is killed (SIGKILL) under a steady load and started again on its own files: every notification
// acknowledged before or after is delivered, and delivery resumes within the bound docs/deploy.md states.
// RESTART_RUNS=10 repeats it and prints each figure (how docs/deploy.md's worst of 10 was measured).
const RUNS = Number(process.env.RESTART_RUNS ?? 1);
/** docs/deploy.md: after Redis is back, delivery resumes within this (the worst of 10 runs, with room). */
const RESUME_BOUND_MS = 10_000;
jest.setTimeout(RUNS * 120_000);

const platform = new FakePlatform();
const SEND_EVERY_MS = 20;

async function oneRun(run: number): Promise<number> {
  // Every write on disk before it is acknowledged, as docs/deploy.md asks of production.
  const dir = tempDir(`restart-${run}`);
  const redis = await RedisServer.start({
    args: ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir, '--appendfilename', 'run.aof'],
  });
  const target = await TargetServer.start();
  const f: ForwardingHarness = buildForwarding(platform, [{ name: 'ledger', url: target.url }], {
    REDIS_URL: redis.url,
  });
  const acknowledged = new Set<string>();
  let sending = true;
  let sent = 0;
  const sender = (async () => {
    while (sending) {
      const id = `REQ-${run}-${sent++}`;
      const n = platform.signed('payment.result', {
        body: `{"type":"MERCH","data":{"request_id":"${id}","amount":1.00}}`,
      });
      const res = await f.platform.send(f.receiver.app, n).catch(() => undefined);
      if (res?.status === 200) acknowledged.add(id);
      await new Promise((r) => setTimeout(r, SEND_EVERY_MS));
    }
  })();
  const deliveredIds = () =>
    new Set(
      target
        .successes()
        .map((r) => (JSON.parse(r.body.toString()) as { data: { data: { request_id: string } } }).data.data.request_id),
    );
  try {
    await target.waitFor(() => target.successes().length >= 20, 30_000);
    await redis.stop();
    await new Promise((r) => setTimeout(r, 1000));
    await redis.start();
    const backAt = Date.now();
    const deliveredBefore = target.successes().length;
    await target.waitFor(() => target.successes().length > deliveredBefore, 60_000);
    const resumedMs = Date.now() - backAt;
    // Load for a while after the restart, then every acknowledged notification is delivered.
    await new Promise((r) => setTimeout(r, 1000));
    sending = false;
    await sender;
    await target.waitFor(() => [...acknowledged].every((id) => deliveredIds().has(id)), 60_000);
    process.stdout.write(
      `run ${run}: delivery resumed ${resumedMs} ms after Redis was back; ${acknowledged.size} of ${sent} acknowledged, all delivered\n`,
    );
    return resumedMs;
  } finally {
    sending = false;
    await sender;
    await f.close();
    await target.close();
    await redis.stop();
  }
}

it('delivers every acknowledged notification across a SIGKILL and restart of Redis, resuming within the bound', async () => {
  const figures: number[] = [];
  for (let run = 1; run <= RUNS; run++) figures.push(await oneRun(run));
  process.stdout.write(`resume after a Redis restart: worst ${Math.max(...figures)} ms of ${RUNS} runs\n`);
  expect(Math.max(...figures)).toBeLessThan(RESUME_BOUND_MS);
});
