import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { stringify } from 'yaml';
import { type RunningService } from '../src/service';
import { LogCapture, testRedisUrl, uniquePrefix } from './support/harness';
import { FakePlatform } from './support/platform';
import { startInProcess } from './support/in-process-service';
import { postRaw } from './support/post-raw';
import { ServiceProcess } from './support/service-process';
import { TargetServer } from './support/target-server';

jest.setTimeout(60000);

const platform = new FakePlatform();
const TOKEN = 'reload-test-admin-token-0123';
const dir = mkdtempSync(path.join(tmpdir(), 'reload-'));
const servers: TargetServer[] = [];

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  rmSync(dir, { recursive: true, force: true });
});

async function target(): Promise<TargetServer> {
  const t = await TargetServer.start();
  servers.push(t);
  return t;
}

function writeConfig(file: string, config: object): void {
  writeFileSync(file, stringify(config));
}

function envFor(file: string): Record<string, string> {
  return {
    REDIS_URL: testRedisUrl(),
    QUEUE_PREFIX: uniquePrefix(),
    PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
    CONFIG_FILE: file,
    ADMIN_TOKEN: TOKEN,
    PORT: '0',
    ADMIN_PORT: '0',
    HOST: '127.0.0.1',
  };
}

let bodies = 0;
async function notify(port: number): Promise<string> {
  const n = platform.signed('payment.result', { body: `{"type":"MERCH","data":{"n":${++bodies},"at":${Date.now()}}}` });
  const res = await postRaw(`http://127.0.0.1:${port}`, n.target, n.headers, n.body);
  expect(res.status).toBe(200);
  return n.body.toString();
}

const received = (t: TargetServer, body: string) => t.requests.some((r) => r.body.toString().includes(body));
/** Deliveries through a loaded 2-core machine: generous, the condition ends the wait. */
const DELIVERY_WAIT_MS = 30000;

describe('reloading the configuration through the admin API', () => {
  let service: RunningService;
  let file: string;
  const logs = new LogCapture();
  const admin = () => request(`http://127.0.0.1:${service.admin.port}`);

  afterAll(() => service?.close());

  it('a target added to the file receives events queued afterwards; other changes are reported, not applied; an invalid file is refused and the old targets keep receiving', async () => {
    const a = await target();
    const b = await target();
    file = path.join(dir, 'api.yaml');
    writeConfig(file, { targets: [{ name: 'a', url: a.url, events: ['*'] }] });
    const env = envFor(file);
    service = await startInProcess(env, logs);
    const port = service.receiver!.port;

    const first = await notify(port);
    await a.waitFor(() => received(a, first), DELIVERY_WAIT_MS);

    writeConfig(file, {
      bodyLimitBytes: 4096,
      targets: [
        { name: 'a', url: a.url, events: ['*'] },
        { name: 'b', url: b.url, events: ['payment.result'] },
      ],
    });
    const reloaded = await admin().post('/admin/api/config/reload').set('authorization', `Bearer ${TOKEN}`).expect(200);
    expect(reloaded.body).toEqual({ added: ['b'], removed: [], changed: [], needsRestart: ['bodyLimitBytes'] });
    expect(logs.find((l) => l.audit === true && l.action === 'config.reload')).toMatchObject({
      added: ['b'],
      needsRestart: ['bodyLimitBytes'],
      principal: 'token',
    });

    const board = await admin().get('/admin/queues/api/queues').set('authorization', `Bearer ${TOKEN}`).expect(200);
    expect(board.body.queues.map((q: { name: string }) => q.name)).toContain('deliver.b'); // the dashboard shows it too

    const second = await notify(port);
    await b.waitFor(() => received(b, second), DELIVERY_WAIT_MS);
    await a.waitFor(() => received(a, second), DELIVERY_WAIT_MS);
    expect(received(b, first)).toBe(false); // fanned out before the reload: not given to b

    writeConfig(file, { targets: [{ name: 'Not A Name', url: 'ftp://nowhere', events: ['*'] }] });
    const refused = await admin().post('/admin/api/config/reload').set('authorization', `Bearer ${TOKEN}`).expect(400);
    expect(refused.body).toMatchObject({
      error: 'invalid_config',
      problems: expect.arrayContaining([expect.stringMatching(/^targets\.0\.name/)]),
    });
    expect(logs.find((l) => l.action === 'config.reload' && l.refused === true)).toBeDefined();

    const third = await notify(port);
    await a.waitFor(() => received(a, third), DELIVERY_WAIT_MS);
    await b.waitFor(() => received(b, third), DELIVERY_WAIT_MS);

    writeConfig(file, { targets: [{ name: 'b', url: b.url, events: ['payment.result'] }] });
    const removed = await admin().post('/admin/api/config/reload').set('authorization', `Bearer ${TOKEN}`).expect(200);
    expect(removed.body).toMatchObject({ added: [], removed: ['a'] });
    const fourth = await notify(port);
    await b.waitFor(() => received(b, fourth), DELIVERY_WAIT_MS);
    await new Promise((r) => setTimeout(r, 300));
    expect(received(a, fourth)).toBe(false);
  });

  it('needs credentials', async () => {
    await admin().post('/admin/api/config/reload').expect(401);
  });
});

describe('reloading with SIGHUP', () => {
  let proc: ServiceProcess | undefined;
  afterAll(() => proc?.kill('SIGKILL'));

  it('a running service process picks up a new target; an invalid file is a log line and the old targets keep receiving', async () => {
    const a = await target();
    const b = await target();
    const file = path.join(dir, 'sighup.yaml');
    writeConfig(file, { targets: [{ name: 'a', url: a.url, events: ['*'] }] });
    const { PORT: _p, ADMIN_PORT: _ap, ...env } = envFor(file);
    proc = await ServiceProcess.start(env);

    writeConfig(file, {
      targets: [
        { name: 'a', url: a.url, events: ['*'] },
        { name: 'b', url: b.url, events: ['*'] },
      ],
    });
    proc.child.kill('SIGHUP');
    expect(await proc.waitForLog((l) => l.message === 'configuration reloaded', 30000)).toMatchObject({ added: ['b'] });
    const first = await notify(proc.port);
    await b.waitFor(() => received(b, first), DELIVERY_WAIT_MS);
    await a.waitFor(() => received(a, first), DELIVERY_WAIT_MS);

    writeConfig(file, { targets: 'not a list' });
    proc.child.kill('SIGHUP');
    expect(
      await proc.waitForLog((l) => String(l.message).startsWith('configuration reload refused'), 30000),
    ).toMatchObject({ problems: [expect.stringMatching(/^targets/)] });
    const second = await notify(proc.port);
    await a.waitFor(() => received(a, second), DELIVERY_WAIT_MS);
    await b.waitFor(() => received(b, second), DELIVERY_WAIT_MS);
  });
});
