import { writeFileSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { stringify } from 'yaml';
import { runCli } from '../src/cli/run';
import type { DeliveryJob } from '../src/model/jobs';
import { type RunningService } from '../src/service';
import { waitUntil } from './support/forwarding-harness';
import { testRedisUrl } from './support/harness';
import { FakePlatform } from './support/platform';
import { postRaw } from './support/post-raw';
import { TargetServer } from './support/target-server';
import { runMain, serviceEnv, startInProcess } from './support/in-process-service';
import { tempDir } from './support/temp-dir';

// A transform is checked before it runs: start-up and reload refuse one that does not compile, naming
// the target, the file and the line; config check tries each on the samples; transform test by hand.
jest.setTimeout(90000);

const platform = new FakePlatform();
const TOKEN = 'transform-config-token-0123';
const dir = tempDir('transform');
const BROKEN = 'function transform(event) {\n  const d = event.data.data;\n  return { id: d.request_id,, };\n}\n';

async function cli(env: Record<string, string>, ...argv: string[]) {
  const out: string[] = [];
  const code = await runCli(argv, { env, out: (l) => out.push(l), err: () => undefined, log: process.stderr });
  return { code, out: out.join('\n') };
}

describe('a transform that does not compile', () => {
  it('stops start-up (exit 78) with the target, the file and the line', async () => {
    const file = path.join(dir, 'broken.js');
    writeFileSync(file, BROKEN);
    const configFile = path.join(dir, 'startup.yaml');
    writeFileSync(
      configFile,
      stringify({
        targets: [{ name: 'ledger', url: 'http://127.0.0.1:1/x', events: ['*'], transform: `file:${file}` }],
      }),
    );
    const { code, stderr } = await runMain(serviceEnv(platform.keys.publicKeyBase64, { CONFIG_FILE: configFile }));
    expect(code).toBe(78);
    expect(stderr).toBe(
      [
        'invalid configuration:',
        `  - targets.0.transform: target "ledger": the transform does not compile: SyntaxError: invalid property name (${file} line 3)`,
        '',
      ].join('\n'),
    );
  });

  it('is refused by config check (exit 78 through the CLI), as start-up refuses it', async () => {
    const configFile = path.join(dir, 'check-broken.yaml');
    writeFileSync(
      configFile,
      stringify({ targets: [{ name: 'inline-one', url: 'http://127.0.0.1:1/x', events: ['*'], transform: BROKEN }] }),
    );
    await expect(
      cli({ ROLE: 'worker', CONFIG_FILE: configFile, REDIS_URL: testRedisUrl() }, 'config', 'check'),
    ).rejects.toThrow(
      `targets.0.transform: target "inline-one": the transform does not compile: SyntaxError: invalid property name (inline:inline-one line 3)`,
    );
  });
});

describe('config check and transform test', () => {
  it('config check prints what each transform makes of the sample of every type it subscribes to, and warns of one that fails', async () => {
    const configFile = path.join(dir, 'check.yaml');
    writeFileSync(
      configFile,
      stringify({
        targets: [
          {
            name: 'ledger',
            url: 'http://127.0.0.1:1/x',
            events: ['payment.result', 'fx.result'],
            transform:
              'function transform(event) {\n  if (event.type === "fx.result") return null;\n  return { paymentId: event.data.data.request_id.slice(0, 3), amount: event.data.data.amount };\n}',
          },
          {
            name: 'payees',
            url: 'http://127.0.0.1:1/y',
            events: ['payee.result'],
            transform: 'function transform(event) {\n  return { n: event.data.data.amount.length };\n}',
          },
        ],
      }),
    );
    const { code, out } = await cli(
      { ROLE: 'worker', CONFIG_FILE: configFile, REDIS_URL: testRedisUrl() },
      'config',
      'check',
    );
    expect(code).toBe(0);
    expect(out).toContain("the samples and bodies as the service would take them (the environment's accept rule");
    expect(out).toContain(
      '  production payment.result sample: accepted\n    ledger: delivered, transformed: {"paymentId":"REQ","amount":"980.00"}',
    );
    expect(out).toContain(
      '  production fx.result sample: accepted\n    ledger: dropped (the transform returned null: nothing sent)',
    );
    expect(out).toContain(
      "    payees: transform_error: TypeError: cannot read property 'length' of undefined (inline:payees line 2)",
    );
    expect(out).toContain(
      "  - target payees's transform fails on the payee.result sample: TypeError: cannot read property 'length' of undefined (inline:payees line 2)",
    );
    // The effective configuration shows the transform as written, once.
    expect(out.split('function transform(event)').length).toBe(3);
  });

  it('transform test --file --type prints the request that would be sent, signature masked, or the error', async () => {
    const body = path.join(dir, 'body.json');
    writeFileSync(body, '{"type":"MERCH","data":{"request_id":"REQ-9","amount":12345678901234567.89}}');
    const configFile = path.join(dir, 'test.yaml');
    writeFileSync(
      configFile,
      stringify({
        targets: [
          {
            name: 'ledger',
            url: 'http://127.0.0.1:1/x',
            events: ['*'],
            secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
            transform:
              'function transform(event) { return { paymentId: event.data.data.request_id, amount: event.data.data.amount }; }',
          },
          {
            name: 'thrower',
            url: 'http://127.0.0.1:1/y',
            events: ['*'],
            transform: 'function transform(event) {\n  throw new Error("no ledger for " + event.type);\n}',
          },
        ],
      }),
    );
    const env = { CONFIG_FILE: configFile, REDIS_URL: testRedisUrl() };
    const shown = await cli(env, 'transform', 'test', '--target', 'ledger', '--file', body, '--type', 'payment.result');
    expect(shown.code).toBe(0);
    expect(shown.out).toMatch(
      /^POST http:\/\/127\.0\.0\.1:1\/x\ncontent-type: application\/json\nwebhook-id: evt_[0-9a-f]{40}\nwebhook-timestamp: \d+\nwebhook-signature: \*\*\*\nx-webhook-environment: production\n\n\{"paymentId":"REQ-9","amount":12345678901234567\.89\}$/,
    );
    const failed = await cli(
      env,
      'transform',
      'test',
      '--target',
      'thrower',
      '--file',
      body,
      '--type',
      'payment.result',
    );
    expect(failed).toEqual({
      code: 1,
      out: 'transform_error: Error: no ledger for payment.result (inline:thrower line 2)',
    });
    await expect(
      cli(env, 'transform', 'test', '--target', 'nobody', '--file', body, '--type', 'payment.result'),
    ).rejects.toThrow('no target named nobody (configured: ledger, thrower)');
  });
});

describe('after a fix and a reload', () => {
  let service: RunningService | undefined;
  let ledger: TargetServer | undefined;
  afterAll(async () => {
    await service?.close();
    await ledger?.close();
  });

  it('a reload refuses a transform that does not compile, naming the line; a fixed one is applied and the dead letters replay; transform test --event shows a stored event', async () => {
    ledger = await TargetServer.start();
    const target = ledger;
    const file = path.join(dir, 'ledger.js');
    writeFileSync(
      file,
      'function transform(event) {\n  return { amount: event.data.data.amount.value, at: event.data.data.missing.when };\n}\n',
    );
    const configFile = path.join(dir, 'reload.yaml');
    writeFileSync(
      configFile,
      stringify({ targets: [{ name: 'ledger', url: target.url, events: ['*'], transform: `file:${file}` }] }),
    );
    const env = serviceEnv(platform.keys.publicKeyBase64, { CONFIG_FILE: configFile, ADMIN_TOKEN: TOKEN });
    service = await startInProcess(env);
    const admin = () => request(`http://127.0.0.1:${service!.admin.port}`);

    const n = platform.signed('payment.result', {
      body: '{"type":"MERCH","data":{"request_id":"REQ-R1","amount":100.10}}',
    });
    expect((await postRaw(`http://127.0.0.1:${service.receiver!.port}`, n.target, n.headers, n.body)).status).toBe(200);
    const queue = service.pipeline.deliveryQueue('ledger')!;
    await waitUntil(async () => (await queue.getFailedCount()) === 1, 30000, 'dead-lettered');
    const [dead] = await queue.getFailed();
    const eventId = dead!.id!;
    expect((dead!.data as DeliveryJob).lastFailure).toMatchObject({
      errorClass: 'transform_error',
      error: `transform_error: TypeError: cannot read property 'when' of undefined (${file} line 2)`,
    });

    writeFileSync(file, BROKEN);
    const refused = await admin().post('/admin/api/config/reload').set('authorization', `Bearer ${TOKEN}`).expect(400);
    expect(refused.body.problems).toEqual([
      `targets.0.transform: target "ledger": the transform does not compile: SyntaxError: invalid property name (${file} line 3)`,
    ]);

    writeFileSync(
      file,
      'function transform(event) {\n  return { paymentId: event.data.data.request_id, amount: event.data.data.amount };\n}\n',
    );
    const reloaded = await admin().post('/admin/api/config/reload').set('authorization', `Bearer ${TOKEN}`).expect(200);
    expect(reloaded.body).toMatchObject({ changed: ['ledger'] });
    await admin()
      .post('/admin/api/dead-letters/replay')
      .set('authorization', `Bearer ${TOKEN}`)
      .send({ all: true, target: 'ledger' })
      .expect(200);
    await target.waitFor(() => target.successes().length === 1, 30000);
    expect(target.successes()[0]!.body.toString()).toBe('{"paymentId":"REQ-R1","amount":100.10}');
    expect(target.successes()[0]!.headers['webhook-id']).toBe(eventId);

    const shown = await cli(
      { CONFIG_FILE: configFile, REDIS_URL: env.REDIS_URL, QUEUE_PREFIX: env.QUEUE_PREFIX },
      'transform',
      'test',
      '--target',
      'ledger',
      '--event',
      eventId,
    );
    expect(shown.code).toBe(0);
    expect(shown.out).toContain(`webhook-id: ${eventId}`);
    expect(shown.out.split('\n').at(-1)).toBe('{"paymentId":"REQ-R1","amount":100.10}');
  });
});
