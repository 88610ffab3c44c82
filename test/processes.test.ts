import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { postRaw } from './support/post-raw';
import { testRedisUrl, uniquePrefix } from './support/harness';
import { FakePlatform } from './support/platform';
import { ServiceProcess } from './support/service-process';
import { TargetServer } from './support/target-server';
import { WORKERS_CUT } from '../src/forwarding/workers';
import { tempDir } from './support/temp-dir';

// Each test starts real service processes; on a loaded 2-core machine that alone can take seconds.
jest.setTimeout(60000);

const platform = new FakePlatform();
const started: ServiceProcess[] = [];
const targets: TargetServer[] = [];

afterEach(async () => {
  await Promise.all(started.splice(0).map((s) => s.kill('SIGKILL')));
  await Promise.all(targets.splice(0).map((t) => t.close()));
});

function writeConfig(config: object): string {
  const file = path.join(tempDir('svc'), 'config.yaml');
  writeFileSync(file, stringify(config));
  return file;
}

async function service(env: Record<string, string>): Promise<ServiceProcess> {
  const s = await ServiceProcess.start(env);
  started.push(s);
  return s;
}

function baseEnv(targetList: object[]): Record<string, string> {
  return {
    REDIS_URL: testRedisUrl(),
    QUEUE_PREFIX: uniquePrefix(),
    PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
    CONFIG_FILE: writeConfig({ targets: targetList }),
    WORKER_LOCK_DURATION_MS: '1500',
    WORKER_STALLED_INTERVAL_MS: '500',
  };
}

function send(port: number, n: ReturnType<FakePlatform['signed']>) {
  return postRaw(`http://127.0.0.1:${port}`, n.target, n.headers, n.body);
}

describe('worker processes', () => {
  it('when a worker is killed with SIGKILL mid-delivery, then another worker still delivers it', async () => {
    const erp = await TargetServer.start((n) => (n === 0 ? 'hang' : { status: 200 }));
    targets.push(erp);
    const env = baseEnv([{ name: 'erp', url: erp.url, events: ['*'], timeoutMs: 30000 }]);
    const receiver = await service({ ...env, ROLE: 'receiver' });
    const first = await service({ ...env, ROLE: 'worker' });

    const n = platform.signed('payment.result');
    await send(receiver.port, n).expect(200);
    await erp.waitFor(() => erp.requests.length === 1); // the first worker is mid-delivery
    await first.kill('SIGKILL');
    await service({ ...env, ROLE: 'worker' });

    await erp.waitFor(() => erp.successes().length === 1, 15000);
    expect(erp.requests.map((r) => r.headers['webhook-id'])).toEqual([
      erp.requests[0]!.headers['webhook-id'],
      erp.requests[0]!.headers['webhook-id'],
    ]);
  });

  it('when a worker gets SIGTERM mid-delivery, then it finishes the delivery before it exits', async () => {
    const erp = await TargetServer.start(() => ({ status: 200, delayMs: 700 }));
    targets.push(erp);
    const env = baseEnv([{ name: 'erp', url: erp.url, events: ['*'] }]);
    const all = await service(env);

    await send(all.port, platform.signed('fx.result')).expect(200);
    await erp.waitFor(() => erp.requests.length === 1);
    const exit = await all.kill('SIGTERM');

    expect(exit).toBe(0);
    expect(erp.successes()).toHaveLength(1);
    expect(all.lines.find((l) => l.message === 'delivered')).toBeDefined();
  });

  it('when Redis does not answer, then SIGTERM still ends the process within its shutdown bounds', async () => {
    const env = baseEnv([{ name: 'erp', url: 'http://127.0.0.1:9/hook', events: ['*'] }]);
    const bounds = { SHUTDOWN_TIMEOUT_MS: '500', WORKER_SHUTDOWN_TIMEOUT_MS: '500' };
    const reachable = await service({ ...env, ...bounds });
    // Port 9 (discard) refuses connections: its connections and workers keep retrying.
    const unreachable = await service({ ...env, ...bounds, REDIS_URL: 'redis://127.0.0.1:9' });
    await new Promise((r) => setTimeout(r, 1500));

    const started = Date.now();
    const exit = await unreachable.kill('SIGTERM');

    // 500 + 500 ms of the two bounds and the 5 s margin, with room for a loaded machine.
    expect(Date.now() - started).toBeLessThan(9000);
    // The workers stop by cutting their connections; if the queues' close still hangs, the process
    // bound ends it with status 1. Either way it says why.
    const cut = unreachable.lines.find((l) => l.message === WORKERS_CUT);
    const overall = unreachable.lines.find(
      (l) =>
        l.message ===
        'shutdown did not finish in time (is Redis reachable?); exiting anyway: in-flight deliveries are picked up again after their lock expires',
    );
    expect(cut ?? overall).toBeDefined();
    if (overall) expect(overall).toMatchObject({ boundMs: 6000 });
    expect(exit).toBe(overall ? 1 : 0);
    expect(await reachable.kill('SIGTERM')).toBe(0); // the same service with Redis up stops cleanly
  });
});

describe('start-up', () => {
  it('when the configuration is invalid, then the service exits 78 and names every problem as the operator wrote it', async () => {
    const { spawn } = await import('node:child_process');
    const file = writeConfig({ targts: [{ name: 'erp', url: 'http://127.0.0.1:9/x', events: ['*'] }] });
    const child = spawn(process.execPath, ['-r', 'ts-node/register', path.resolve(__dirname, '../src/main.ts')], {
      env: { ...process.env, TS_NODE_SWC: 'true', PLATFORM_PUBLIC_KEYS: 'not-a-key!', PORT: 'http', CONFIG_FILE: file },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(78);
    expect(stderr).toBe(
      [
        'invalid configuration:',
        '  - PORT: Invalid input: expected number, received string',
        `  - unknown setting targts (did you mean targets?) (in ${file})`,
        '',
      ].join('\n'),
    );
  });
});

describe('start-up warnings', () => {
  it('when a variable looks like a mistyped setting, then the service still starts and says which setting was meant', async () => {
    const env = baseEnv([{ name: 'erp', url: 'http://127.0.0.1:9/hook', events: ['*'] }]);
    const s = await service({ ...env, ROLE: 'receiver', SHUTDOWN_TIMEOUT_MS: '500', SHUTDOWN_TIMOUT_MS: '60000' });
    expect(s.lines.find((l) => l.message === 'environment variable ignored: not a setting')).toMatchObject({
      level: 'warn',
      variable: 'SHUTDOWN_TIMOUT_MS',
      didYouMean: 'SHUTDOWN_TIMEOUT_MS',
    });
  });
});

describe('several receivers and workers on one Redis', () => {
  it('when one notification is sent to two receivers at once, then each target gets it once', async () => {
    const ledger = await TargetServer.start();
    const crm = await TargetServer.start();
    targets.push(ledger, crm);
    const env = baseEnv([
      { name: 'ledger', url: ledger.url, events: ['*'] },
      { name: 'crm', url: crm.url, events: ['*'] },
    ]);
    const [r1, r2] = await Promise.all([service({ ...env, ROLE: 'receiver' }), service({ ...env, ROLE: 'receiver' })]);
    await Promise.all([service({ ...env, ROLE: 'worker' }), service({ ...env, ROLE: 'worker' })]);

    const n = platform.signed('remittance.incoming');
    const answers = await Promise.all([send(r1!.port, n), send(r2!.port, n)]);
    expect(answers.map((a) => a.status)).toEqual([200, 200]);

    await ledger.waitFor(() => ledger.requests.length === 1, 30000);
    await crm.waitFor(() => crm.requests.length === 1, 30000);
    await new Promise((r) => setTimeout(r, 1000));
    expect(ledger.requests).toHaveLength(1);
    expect(crm.requests).toHaveLength(1);
  });
});
