import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { postRaw } from '../support/post-raw';
import { testRedisUrl, uniquePrefix } from '../support/harness';
import { FakePlatform } from '../support/platform';
import { ServiceProcess } from '../support/service-process';
import { TargetServer, type ReceivedRequest } from '../support/target-server';

// Four real service processes on a 2-core machine, then 300 notifications each way.
jest.setTimeout(120000);

const platform = new FakePlatform();
const KEYS = 50;
const STEPS = 6;

/** A target that answers after 0-50 ms, and 503 about 15 % of the time (seeded, so runs compare). */
function flakyTarget(seed: number): Promise<TargetServer> {
  let s = seed;
  const random = () => (s = (s * 16807) % 2147483647) / 2147483647;
  return TargetServer.start(() => ({ status: random() < 0.15 ? 503 : 200, delayMs: Math.floor(random() * 51) }));
}

interface Seen {
  key: string;
  step: number;
  ok: boolean;
  at: number;
  answeredAt: number;
}

function seenAt(target: TargetServer): Seen[] {
  return target.requests.map((r: ReceivedRequest) => {
    const body = JSON.parse(r.body.toString('utf8')) as { data: { data: { request_id: string; step: number } } };
    const ok = r.answered !== undefined && r.answered < 300;
    return {
      key: body.data.data.request_id,
      step: body.data.data.step,
      ok,
      at: r.at,
      answeredAt: r.answeredAt ?? Infinity,
    };
  });
}

/** Per key: the steps received successfully, in arrival order, and any step tried before the one before it had succeeded. */
function orderFindings(seen: Seen[], prefix: string): { wrongOrder: string[]; early: string[] } {
  const wrongOrder: string[] = [];
  const early: string[] = [];
  for (let k = 0; k < KEYS; k++) {
    const key = `${prefix}-${k}`;
    const mine = seen.filter((r) => r.key === key);
    // A 2xx that came after our timeout is delivered again at once (at least once): an immediate
    // repeat of the same step is not out of order.
    const delivered = mine
      .filter((r) => r.ok)
      .map((r) => r.step)
      .filter((step, i, all) => step !== all[i - 1]);
    if (delivered.join(',') !== Array.from({ length: STEPS }, (_, i) => i + 1).join(','))
      wrongOrder.push(`${key}: ${delivered.join(',')}`);
    for (let step = 2; step <= STEPS; step++) {
      const firstTry = Math.min(...mine.filter((r) => r.step === step).map((r) => r.at));
      const before = mine.find((r) => r.step === step - 1 && r.ok);
      if (!before || firstTry < before.answeredAt) early.push(`${key} step ${step}`);
    }
  }
  return { wrongOrder, early };
}

describe('ordered delivery across two receiver and two worker processes', () => {
  const started: ServiceProcess[] = [];
  const targets: TargetServer[] = [];
  let dir: string;
  let fast: TargetServer;
  let slow: TargetServer;
  let receivers: ServiceProcess[];
  const TOKEN = 'ordered-processes-admin-token-0123456789';

  beforeAll(async () => {
    // Two targets with order.key, identical but for their concurrency, get every notification.
    [fast, slow] = await Promise.all([flakyTarget(11), flakyTarget(11)]);
    targets.push(fast, slow);
    const common = {
      events: ['payment.result'],
      maxAttempts: 25,
      backoff: { initialMs: 20, maxMs: 200 },
      order: { key: 'data.request_id' },
    };
    dir = mkdtempSync(path.join(tmpdir(), 'ordered-'));
    const configFile = path.join(dir, 'config.yaml');
    writeFileSync(
      configFile,
      stringify({
        targets: [
          { name: 'fast', url: fast.url, concurrency: 8, ...common },
          { name: 'slow', url: slow.url, concurrency: 1, ...common },
        ],
      }),
    );
    const env = {
      REDIS_URL: testRedisUrl(),
      QUEUE_PREFIX: uniquePrefix(),
      PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
      CONFIG_FILE: configFile,
      ADMIN_TOKEN: TOKEN,
    };
    const roles = ['receiver', 'receiver', 'worker', 'worker'];
    // Warnings and errors only: 600 'delivered' lines would cost the two cores more than the deliveries.
    started.push(...(await Promise.all(roles.map((ROLE) => ServiceProcess.startQuiet({ ...env, ROLE })))));
    receivers = started.slice(0, 2);
  });
  afterAll(async () => {
    await Promise.all(started.map((s) => s.kill('SIGKILL')));
    await Promise.all(targets.map((t) => t.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * 50 keys × 6 steps, interleaved: each key's next step is sent once the step before was answered
   * 200, the keys side by side, alternating between the two receivers.
   */
  async function sendAll(prefix: string): Promise<void> {
    let sends = 0;
    await Promise.all(
      Array.from({ length: KEYS }, async (_, k) => {
        for (let step = 1; step <= STEPS; step++) {
          const body = JSON.stringify({
            type: 'PAY',
            data: { request_id: `${prefix}-${k}`, step, status: `S${step}` },
          });
          const n = platform.signed('payment.result', { body });
          const receiver = receivers[sends++ % 2]!;
          const answer = await postRaw(`http://127.0.0.1:${receiver.port}`, n.target, n.headers, n.body);
          expect(answer.status).toBe(200);
        }
      }),
    );
  }

  function successesOf(target: TargetServer, prefix: string): ReceivedRequest[] {
    return target.successes().filter((r) => r.body.includes(`"${prefix}-`));
  }

  /** Distinct notifications delivered (a late 2xx after our timeout is delivered again). */
  function deliveredCount(target: TargetServer, prefix: string): number {
    return new Set(successesOf(target, prefix).map((r) => r.headers['webhook-id'])).size;
  }

  async function targetAction(name: string, action: 'pause' | 'resume'): Promise<void> {
    const admin = started[0]!.adminPort;
    const res = await fetch(`http://127.0.0.1:${admin}/admin/api/targets/${name}/${action}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(res.status).toBe(200);
  }

  it('delivers every key in send order while notifications still arrive, and tries no step before the one before it succeeded', async () => {
    await sendAll('LIVE');
    const total = KEYS * STEPS;
    await Promise.all([fast, slow].map((t) => t.waitFor(() => deliveredCount(t, 'LIVE') >= total, 90000)));
    for (const target of [fast, slow]) {
      const seen = seenAt(target).filter((r) => r.key.startsWith('LIVE-'));
      expect(new Set(seen.filter((r) => r.ok).map((r) => `${r.key}/${r.step}`)).size).toBe(total);
      expect(orderFindings(seen, 'LIVE')).toEqual({ wrongOrder: [], early: [] });
      expect(seen.length).toBeGreaterThan(total); // the 503s happened, so retries were in the order's way
    }
  });

  it('drains the same ordered backlog at least 4x faster with concurrency 8 than with concurrency 1', async () => {
    // The backlog arrives while both targets are paused; then both drain from the same moment.
    await Promise.all(['fast', 'slow'].map((t) => targetAction(t, 'pause')));
    await sendAll('DRAIN');
    const total = KEYS * STEPS;
    const startedAt = Date.now();
    await Promise.all(['fast', 'slow'].map((t) => targetAction(t, 'resume')));
    const drained = async (t: TargetServer) => {
      await t.waitFor(() => deliveredCount(t, 'DRAIN') >= total, 90000);
      return Math.max(...successesOf(t, 'DRAIN').map((r) => r.answeredAt ?? 0)) - startedAt;
    };
    const [fastMs, slowMs] = await Promise.all([drained(fast), drained(slow)]);
    for (const target of [fast, slow])
      expect(
        orderFindings(
          seenAt(target).filter((r) => r.key.startsWith('DRAIN-')),
          'DRAIN',
        ),
      ).toEqual({ wrongOrder: [], early: [] });
    // The measurement this test exists for, in the run's output.
    console.log(
      `ordered drain of ${total} notifications (${KEYS} keys, two workers): concurrency 8 ${fastMs} ms, concurrency 1 ${slowMs} ms (${(slowMs / fastMs).toFixed(1)}x)`,
    );
    expect(slowMs / fastMs).toBeGreaterThanOrEqual(4);
  });
});
