import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { connect as natsConnect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import request from 'supertest';
import { stringify } from 'yaml';
import { wireAdmin } from '../src/admin/wiring';
import { runCli } from '../src/cli/run';
import { startWorkers, type RunningWorkers } from '../src/forwarding/workers';
import { createLogger } from '../src/logging/logger';
import { eventIdFor } from '../src/model/ids';
import { NatsServer } from './support/broker-servers';
import { ADMIN_TEST_TOKEN, waitUntil } from './support/forwarding-harness';
import { buildHarness, LogCapture, type Harness } from './support/harness';
import { FakePlatform } from './support/platform';
import { TargetServer } from './support/target-server';
import { tempDir } from './support/temp-dir';

// `cli event` tells what the console and the admin API tell: a broker's confirmation, attempts
// counted across every series, the target asked about first; a quarantined body is shown in all three.

const platform = new FakePlatform();
const operator = { username: 'ops', password: 'correct horse battery' };
const auth = { authorization: `Bearer ${ADMIN_TEST_TOKEN}` };
let nats: NatsServer;
let erp: TargetServer;
let erpUp = false;
let h: Harness;
let workers: RunningWorkers;
let admin: ReturnType<typeof wireAdmin>;
let cliEnv: Record<string, string>;
const logs = new LogCapture();

beforeAll(async () => {
  nats = await NatsServer.start();
  const nc = await natsConnect({ servers: nats.url });
  await (await jetstreamManager(nc)).streams.add({ name: 'PLATFORM', subjects: ['platform.>'] });
  await nc.close();
  erp = await TargetServer.start(() => (erpUp ? { status: 200 } : { status: 500, body: '{"error":"period closed"}' }));
  const quick = { timeoutMs: 2000, maxAttempts: 2, backoff: { initialMs: 50, maxMs: 100 } };
  const configFile = path.join(tempDir('cli-event'), 'config.yaml');
  writeFileSync(
    configFile,
    stringify({
      targets: [
        {
          name: 'bus',
          events: ['payment.result'],
          destination: { type: 'nats', servers: [nats.url], subject: 'platform.{type}' },
          ...quick,
        },
        { name: 'erp', url: erp.url, events: ['payment.result'], ...quick },
      ],
    }),
  );
  h = buildHarness({
    CONFIG_FILE: configFile,
    PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
    ADMIN_TOKEN: ADMIN_TEST_TOKEN,
    ADMIN_USER: operator.username,
    ADMIN_PASSWORD: operator.password,
  });
  workers = startWorkers(h.config, h.pipeline, createLogger('error', logs.stream), h.metrics, h.connector);
  admin = wireAdmin(h.config, h.pipeline, h.metrics.registry, createLogger('error', logs.stream));
  cliEnv = { CONFIG_FILE: configFile, REDIS_URL: h.config.redisUrl, QUEUE_PREFIX: h.config.queuePrefix };
}, 30000);
afterAll(async () => {
  await workers?.close();
  await h?.close();
  await erp?.close();
  await nats?.stop();
});

async function cli(...argv: string[]) {
  const out: string[] = [];
  const env = { ...cliEnv, PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64 };
  const code = await runCli(argv, { env, out: (l) => out.push(l), err: () => undefined, log: logs.stream });
  return { code, out: out.join('\n') };
}

const consolePage = (url: string) =>
  request(admin)
    .get(url)
    .auth(operator.username, operator.password)
    .expect(200)
    .then((r) => r.text);

describe('cli event tells what the console tells', () => {
  it('a broker delivery shows its confirmation; attempts across a dead letter and its replay count the same in CLI, API and console', async () => {
    const body = JSON.stringify({ type: 'MERCH', data: { request_id: 'PAR-1', amount: '12.50', currency: 'EUR' } });
    await platform.send(h.app, platform.signed('payment.result', { body })).expect(200);
    const eventId = eventIdFor('payment.result', 'production', Buffer.from(body));
    const erpQueue = h.pipeline.deliveryQueue('erp')!;
    await waitUntil(async () => (await erpQueue.getJobState(eventId)) === 'failed', 10000, 'erp dead-lettered');
    erpUp = true;
    await request(admin)
      .post('/admin/api/dead-letters/replay')
      .set(auth)
      .send({ ids: [`erp/${eventId}`] })
      .expect(200);
    await waitUntil(async () => (await erpQueue.getJobState(eventId)) === 'completed', 10000, 'erp delivered');
    const busQueue = h.pipeline.deliveryQueue('bus')!;
    await waitUntil(async () => (await busQueue.getJobState(eventId)) === 'completed', 10000, 'bus delivered');

    const view = (await request(admin).get(`/admin/api/events/${eventId}`).set(auth).expect(200)).body;
    const erpView = view.deliveries.find((d: { target: string }) => d.target === 'erp');
    expect(erpView.totalAttempts).toBe(3);
    expect(erpView.attemptsMade).toBe(1); // BullMQ's count of the current series only
    expect(view.facts).toEqual({ requestId: 'PAR-1', amount: '12.50', currency: 'EUR' });

    const { code, out } = await cli('event', eventId, '--target', 'erp');
    expect(code).toBe(0);
    expect(out).toContain(`${eventId}  payment.result  production  received ${view.receivedAt}  sent on to 2 targets`);
    expect(out).toContain('  request_id PAR-1  12.50 EUR');
    const table = out.split('\n');
    const header = table.findIndex((l) => l.startsWith('TARGET  STATE'));
    expect(table[header + 2]).toMatch(/^erp +completed +3 \(2\+1\) /); // the target asked about, first
    expect(table[header + 3]).toMatch(/^bus +completed +1 /);
    expect(out).toMatch(/^bus +1\.1 +\S+ +delivered .*confirmed: stream PLATFORM seq 1$/m);

    const json = JSON.parse((await cli('event', eventId, '--json')).out);
    expect(json.deliveries.find((d: { target: string }) => d.target === 'erp').totalAttempts).toBe(3);

    const list = await consolePage(`/admin/console/events?q=${eventId}`);
    expect(list).toMatch(/data-attempts="3"/);
    expect(list).toContain('request_id PAR-1 · 12.50 EUR');
    const page = await consolePage(`/admin/console/events/${eventId}`);
    expect(page).toContain('3 attempts (series 1: 2, series 2: 1)');
    expect(page).toContain('sent on to 2 targets');
    expect(page).toMatch(/data-request-id>PAR-1</);
  }, 30000);

  it('a quarantined JSON body and a quarantined non-JSON body are shown in the API, the CLI and the console', async () => {
    // JSON, but not its schema (the remittance notification's type is fixed); and not JSON at all.
    const json = JSON.stringify({ type: 'WRONG', data: { request_id: 'Q-1', payer_name: 'Jane Roe' } });
    const text = 'amount=1&note=<b>not json</b>';
    for (const body of [json, text])
      await platform.send(h.app, platform.signed('remittance.incoming', { body })).expect(200);
    const jsonId = eventIdFor('remittance.incoming', 'production', Buffer.from(json));
    const textId = eventIdFor('remittance.incoming', 'production', Buffer.from(text));

    const jsonView = (await request(admin).get(`/admin/api/events/${jsonId}`).set(auth).expect(200)).body;
    expect(jsonView.quarantineReason).toBe('invalid');
    expect(jsonView.payload).toEqual({ type: 'WRONG', data: { request_id: 'Q-1', payer_name: '***' } });
    const textView = (await request(admin).get(`/admin/api/events/${textId}`).set(auth).expect(200)).body;
    expect(textView.payload).toBeUndefined();
    expect(textView).toMatchObject({ body: text, bodyEncoding: 'utf8', quarantineReason: 'invalid' });

    const jsonCli = await cli('event', jsonId);
    expect(jsonCli.out).toContain('quarantined (invalid): forwarded nowhere');
    expect(jsonCli.out).toContain('payload (sensitive fields masked): {"type":"WRONG","data":{"request_id":"Q-1"');
    const textCli = await cli('event', textId);
    expect(textCli.out).toContain(`body as received (not JSON): ${JSON.stringify(text)}`);

    const jsonPage = await consolePage(`/admin/console/events/${jsonId}`);
    expect(jsonPage).toContain('&quot;request_id&quot;: &quot;Q-1&quot;');
    expect(jsonPage).not.toContain('No payload to show');
    const textPage = await consolePage(`/admin/console/events/${textId}`);
    expect(textPage).toContain('amount=1&amp;note=&lt;b&gt;not json&lt;/b&gt;');
    expect(textPage).not.toContain('<b>not json</b>');

    // And config check tries the quarantined bodies against the configuration as it is now.
    const { out } = await cli('config', 'check', '--from-quarantine');
    expect(out).toMatch(new RegExp(`production remittance\\.incoming quarantined \\S+: invalid \\(quarantined\\)`));
  }, 30000);
});
