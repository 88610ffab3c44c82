import { stopChild } from '../src/demo/stop-child';
import { postRaw } from './support/post-raw';
import { RedisServer } from './support/redis-server';
import { ServiceProcess } from './support/service-process';
import { TargetServer } from './support/target-server';
import { FakePlatform } from './support/platform';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';

/** The figure: a 20-second outage wrote 380 warning lines. */
const OUTAGE_MS = 20_000;

let redis: RedisServer;
let target: TargetServer;
let service: ServiceProcess | undefined;
const platform = new FakePlatform();
const dir = mkdtempSync(path.join(tmpdir(), 'outage-'));

beforeAll(async () => {
  redis = await RedisServer.start();
  target = await TargetServer.start();
});
afterAll(async () => {
  if (service) await stopChild(service.child, 10000);
  await redis.stop();
  await target.close();
  rmSync(dir, { recursive: true, force: true });
});

async function waitFor(predicate: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`not recovered within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

it(
  `when Redis is down for ${OUTAGE_MS / 1000} s, then one service process writes fewer than 20 log lines, says Redis is unreachable, and recovers by itself`,
  async () => {
    const config = path.join(dir, 'config.yaml');
    writeFileSync(config, stringify({ targets: [{ name: 'erp', url: target.url, events: ['*'] }] }));
    service = await ServiceProcess.start({
      REDIS_URL: redis.url,
      CONFIG_FILE: config,
      PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
      ADMIN_TOKEN: 'outage-test-admin-token-0123',
    });
    await service.waitForLog((l) => l.message === 'workers started');
    await new Promise((r) => setTimeout(r, 500));

    const before = service.lines.length;
    await redis.stop();
    await new Promise((r) => setTimeout(r, OUTAGE_MS));
    const during = service.lines.slice(before);
    await redis.start();

    const summary = during.map((l) => `${String(l.message)}: ${String(l.error ?? '')}`);
    process.stdout.write(
      `${during.length} log lines during a ${OUTAGE_MS / 1000} s Redis outage:\n${summary.join('\n')}\n`,
    );
    expect(summary.some((line) => /redis connection error: .*ECONNREFUSED/.test(line))).toBe(true);
    expect(during.length).toBeLessThan(20);

    // And it recovers by itself: a notification sent now is delivered.
    const n = platform.signed('payment.result');
    let last = '';
    await waitFor(async () => {
      const res = await postRaw(`http://127.0.0.1:${service!.port}`, n.target, n.headers, n.body);
      last = `${res.status} ${res.text}`;
      return res.status === 200;
    }, 30000).catch((err: Error) => {
      throw new Error(
        `${err.message}; last answer ${last}; log: ${service!.lines
          .slice(-5)
          .map((l) => JSON.stringify(l))
          .join('\n')}`,
      );
    });
    await target.waitFor(() => target.successes().length === 1, 20000);
  },
  OUTAGE_MS + 90_000,
);
