import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DeliveryJob } from '../src/model/jobs';
import { buildForwarding, waitUntil, type ForwardingHarness } from './support/forwarding-harness';
import { counterValue } from './support/metric-value';
import { FakePlatform } from './support/platform';
import { TargetServer } from './support/target-server';

// Transforms run isolated from the service: what a hostile or broken one does fails its own delivery
// for good (transform_error, with the message and the line) and nothing else; the receiver stays live.
jest.setTimeout(240000);

const platform = new FakePlatform();

/** Each is harmless for other event types (so a first event shows every sandbox compiled), hostile on payment.result. */
const HOSTILE: Record<string, { body: string; error: RegExp }> = {
  loop: { body: 'while (true) {}', error: /^transform_error: timed out after 50 ms \(inline:loop\)$/ },
  alloc: {
    body: 'const big = new Uint8Array(100 * 1024 * 1024);\n  return { n: big.length };',
    error: /^transform_error: InternalError: out of memory \(limit 32 MiB\) \(inline:alloc line 3\)$/,
  },
  require: {
    body: 'return require("fs").readFileSync("/etc/passwd", "utf8");',
    error: /^transform_error: ReferenceError: 'require' is not defined \(inline:require line 3\)$/,
  },
  exit: {
    body: 'process.exit(1);',
    error: /^transform_error: ReferenceError: 'process' is not defined \(inline:exit line 3\)$/,
  },
  fetch: {
    body: 'return fetch("http://127.0.0.1:1/");',
    error: /^transform_error: ReferenceError: 'fetch' is not defined \(inline:fetch line 3\)$/,
  },
  escape: {
    body: 'return globalThis.constructor.constructor("return process")().env;',
    error: /^transform_error: ReferenceError: 'process' is not defined \(inline:escape line 3\)$/,
  },
};
const source = (body: string) =>
  `function transform(event) {\n  if (event.type !== 'payment.result') return null;\n  ${body}\n}`;

let f: ForwardingHarness;
let plain: TargetServer;
let shaped: TargetServer;
let hostile: TargetServer;
let publicPort: Server;
let healthUrl: string;

beforeAll(async () => {
  [plain, shaped, hostile] = await Promise.all([TargetServer.start(), TargetServer.start(), TargetServer.start()]);
  f = buildForwarding(platform, [
    { name: 'plain', url: plain.url },
    {
      name: 'shaped',
      url: shaped.url,
      transform: 'function transform(event) { return { id: event.id, type: event.type }; }',
    },
    ...Object.entries(HOSTILE).map(([name, h]) => ({
      name,
      url: hostile.url,
      transform: source(h.body),
      maxAttempts: 5,
    })),
  ]);
  publicPort = createServer(f.receiver.app);
  await new Promise<void>((r) => publicPort.listen(0, '127.0.0.1', () => r()));
  healthUrl = `http://127.0.0.1:${(publicPort.address() as AddressInfo).port}/healthz`;
});
afterAll(async () => {
  await f.close();
  await new Promise((r) => publicPort.close(r));
  await Promise.all([plain, shaped, hostile].map((t) => t.close()));
});

/**
 * Asks /healthz every 20 ms from another process (so the asking does not share the service's event
 * loop) until stopped; returns each answer's time in ms, or -1 for one that was not a 200.
 */
async function pollHealth(): Promise<{ stop(): Promise<number[]> }> {
  const script = `
    const url = process.argv[1]; const times = []; let running = true;
    process.stdin.on('data', () => { running = false; }); process.stdin.resume();
    (async () => {
      while (running) {
        const started = performance.now();
        const res = await fetch(url).catch(() => undefined);
        if (res) await res.arrayBuffer();
        times.push(res && res.status === 200 ? performance.now() - started : -1);
        if (times.length === 1) process.stdout.write('ready\\n');
        await new Promise((r) => setTimeout(r, 20));
      }
      process.stdout.write(JSON.stringify(times) + '\\n');
      process.exit(0);
    })();`;
  const child = spawn(process.execPath, ['-e', script, healthUrl], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  await waitUntil(() => out.startsWith('ready\n'), 20000, 'the /healthz poller started');
  return {
    async stop() {
      child.stdin.end('stop\n');
      await exited;
      return JSON.parse(out.slice('ready\n'.length)) as number[];
    },
  };
}

describe('a hostile or broken transform', () => {
  it('an infinite loop, a 100 MB allocation, require, process.exit, fetch and escaping through constructors each fail their delivery with transform_error; other targets and the receiver keep working', async () => {
    // A first event the hostile transforms drop: every sandbox has compiled and answered. Sandbox threads
    // starting at once on a loaded machine can hold the first enqueue past its timeout: a 503 is sent
    // again, as the platform does.
    await waitUntil(
      async () => (await f.platform.send(f.receiver.app, f.platform.signed('fx.result'))).status === 200,
      30000,
      'the first notification acknowledged',
    );
    await waitUntil(
      async () => {
        const counts = await Promise.all(
          Object.keys(HOSTILE).map((name) =>
            counterValue(f.metrics.deliveries, { target: name, event_type: 'fx.result', outcome: 'dropped' }),
          ),
        );
        return counts.every((c) => c === 1);
      },
      30000,
      'every hostile sandbox compiled',
    ).catch(async (err: Error) => {
      const states = await Promise.all(
        Object.keys(HOSTILE).map(async (name) => {
          const jobs = await f.pipeline
            .deliveryQueue(name)!
            .getJobs(['failed', 'completed', 'active', 'wait', 'delayed']);
          return `${name}: ${jobs.map((j) => `${j.data.eventType} ${j.failedReason ?? ''} ${JSON.stringify(j.returnvalue)}`).join('; ')}`;
        }),
      );
      throw new Error(`${err.message}\n${states.join('\n')}`);
    });

    const health = await pollHealth();
    try {
      await deliverAmongHostile();
    } finally {
      const times = await health.stop();
      expect(times.length).toBeGreaterThan(3);
      // The poller's first request (before it said ready) loaded its fetch: not the receiver's time.
      const answered = times.slice(1);
      expect(answered.every((t) => t >= 0)).toBe(true);
      // A main thread held by a transform would stall /healthz for the whole run: past the time limit
      // and the watchdog's second. The bound leaves room for a loaded 2-core machine's scheduling
      // alone, which has held one answer for 250 ms.
      expect(Math.max(...answered)).toBeLessThan(500);
    }
  });
});

async function deliverAmongHostile(): Promise<void> {
  await f.platform.send(f.receiver.app, f.platform.signed('payment.result')).expect(200);
  const eventId = await (async () => {
    await plain.waitFor(() => plain.successes().length === 2, 20000);
    return String(plain.requests[1]!.headers['webhook-id']);
  })();
  for (const name of Object.keys(HOSTILE)) {
    await waitUntil(
      async () => (await f.pipeline.deliveryQueue(name)!.getJobState(eventId)) === 'failed',
      // A timeout is tried twice, the second time on a thread started afresh: seconds on a loaded machine.
      60000,
      `${name} dead-lettered`,
    );
  }
  // Once, at once: permanent, not retried (maxAttempts is 5).
  for (const [name, h] of Object.entries(HOSTILE)) {
    const job = await f.pipeline.deliveryQueue(name)!.getJob(eventId);
    const data = job!.data as DeliveryJob;
    expect({ name, attempts: job!.attemptsMade, errorClass: data.lastFailure?.errorClass }).toEqual({
      name,
      attempts: 1,
      errorClass: 'transform_error',
    });
    expect(data.lastFailure!.error).toMatch(h.error);
    expect(job!.failedReason).toMatch(h.error);
  }
  expect(hostile.requests).toHaveLength(0);

  // Other targets, and the sandboxes that failed, go on with the next event.
  await f.platform.send(f.receiver.app, f.platform.signed('settlement.result')).expect(200);
  await plain.waitFor(() => plain.successes().length === 3, 20000);
  await shaped.waitFor(() => shaped.successes().length === 3, 20000);
  await waitUntil(
    async () =>
      (
        await Promise.all(
          Object.keys(HOSTILE).map((name) =>
            counterValue(f.metrics.deliveries, { target: name, event_type: 'settlement.result', outcome: 'dropped' }),
          ),
        )
      ).every((c) => c === 1),
    60000,
    'the hostile sandboxes answer again',
  );
}
