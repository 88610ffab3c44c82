import { writeFileSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { stringify } from 'yaml';
import { runCli } from '../src/cli/run';
import { loadConfig } from '../src/config/load';
import type { RunningService } from '../src/service';
import { transformProblems } from '../src/transform/check';
import { testRedisUrl } from './support/harness';
import { FakePlatform } from './support/platform';
import { postRaw } from './support/post-raw';
import { TargetServer } from './support/target-server';
import { runMain, serviceEnv, startInProcess } from './support/in-process-service';
import { tempDir } from './support/temp-dir';

// A transform whose top level throws a value with a looping getter is refused, within 5 s, everywhere a
// transform is compiled: start-up, reload (which keeps the running config and lets a later reload
// through), config check and transform test.
jest.setTimeout(120000);

const platform = new FakePlatform();
const TOKEN = 'transform-refusal-token-0123';
const dir = tempDir('transform-refusal');
const GETTER = 'throw { get message() { for (;;) {} } };\nfunction transform(event) { return { ok: 1 }; }\n';
const GOOD = 'function transform(event) { return { paymentId: event.data.data.request_id }; }\n';
const REFUSED = (file: string) =>
  `targets.0.transform: target "ledger": the transform does not compile in time: timed out after 50 ms (${file})`;

function configFor(file: string, url = 'http://127.0.0.1:1/x'): string {
  const configFile = path.join(dir, `${path.basename(file)}.yaml`);
  writeFileSync(
    configFile,
    stringify({ targets: [{ name: 'ledger', url, events: ['*'], transform: `file:${file}` }] }),
  );
  return configFile;
}

async function within5s<T>(work: Promise<T>): Promise<T> {
  const started = performance.now();
  const value = await work;
  expect(performance.now() - started).toBeLessThan(5000);
  return value;
}

describe('a top level that throws a value whose getter loops', () => {
  const file = path.join(dir, 'getter.js');
  beforeAll(() => writeFileSync(file, GETTER));

  it('is refused by the start-up check, and the service exits 78 naming the target', async () => {
    const configFile = configFor(file);
    const config = loadConfig({ ROLE: 'worker', CONFIG_FILE: configFile, REDIS_URL: testRedisUrl() });
    expect(await within5s(transformProblems(config.targets))).toEqual([REFUSED(file)]);
    const { code, stderr } = await runMain(serviceEnv(platform.keys.publicKeyBase64, { CONFIG_FILE: configFile }));
    expect(code).toBe(78);
    expect(stderr).toBe(`invalid configuration:\n  - ${REFUSED(file)}\n`);
  });

  it('is refused by config check and by transform test', async () => {
    const env = { ROLE: 'worker', CONFIG_FILE: configFor(file), REDIS_URL: testRedisUrl() };
    const quiet = { out: () => undefined, err: () => undefined, log: process.stderr };
    await expect(within5s(runCli(['config', 'check'], { env, ...quiet }))).rejects.toThrow(REFUSED(file));
    const body = path.join(dir, 'body.json');
    writeFileSync(body, '{"type":"MERCH","data":{"request_id":"REQ-9","amount":1.00}}');
    const out: string[] = [];
    const code = await within5s(
      runCli(['transform', 'test', '--target', 'ledger', '--file', body, '--type', 'payment.result'], {
        env,
        ...quiet,
        out: (l) => out.push(l),
      }),
    );
    expect({ code, out }).toEqual({ code: 1, out: [`transform_error: timed out after 50 ms (${file})`] });
  });

  describe('on reload', () => {
    let service: RunningService | undefined;
    let ledger: TargetServer | undefined;
    afterAll(async () => {
      await service?.close();
      await ledger?.close();
    });

    it('answers within 5 s refusing it, the running transform goes on, and a later reload with a good file applies', async () => {
      ledger = await TargetServer.start();
      const target = ledger;
      const live = path.join(dir, 'live.js');
      writeFileSync(live, GOOD);
      const env = serviceEnv(platform.keys.publicKeyBase64, {
        CONFIG_FILE: configFor(live, target.url),
        ADMIN_TOKEN: TOKEN,
      });
      service = await startInProcess(env);
      const admin = () => request(`http://127.0.0.1:${service!.admin.port}`);
      const reload = () => admin().post('/admin/api/config/reload').set('authorization', `Bearer ${TOKEN}`);
      const send = async (id: string) => {
        const n = platform.signed('payment.result', { body: `{"type":"MERCH","data":{"request_id":"${id}"}}` });
        const res = await postRaw(`http://127.0.0.1:${service!.receiver!.port}`, n.target, n.headers, n.body);
        expect(res.status).toBe(200);
      };

      writeFileSync(live, GETTER);
      const refused = await within5s(reload());
      expect(refused.status).toBe(400);
      expect(refused.body.problems).toEqual([REFUSED(live)]);
      await send('REQ-OLD');
      await target.waitFor(() => target.successes().length === 1, 30000);
      expect(target.successes()[0]!.body.toString()).toBe('{"paymentId":"REQ-OLD"}');

      writeFileSync(live, 'function transform(event) { return { fixed: event.data.data.request_id }; }\n');
      const applied = await within5s(reload());
      expect(applied.status).toBe(200);
      expect(applied.body).toMatchObject({ changed: ['ledger'] });
      await send('REQ-NEW');
      await target.waitFor(() => target.successes().length === 2, 30000);
      expect(target.successes()[1]!.body.toString()).toBe('{"fixed":"REQ-NEW"}');
    });
  });
});
