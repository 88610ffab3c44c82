import { writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { runCli } from '../src/cli/run';
import { buildForwarding, waitUntil, type ForwardingHarness } from './support/forwarding-harness';
import { LogCapture } from './support/harness';
import { FakePlatform } from './support/platform';
import { TargetServer } from './support/target-server';
import { tempDir } from './support/temp-dir';

const platform = new FakePlatform();
let f: ForwardingHarness;
let erp: TargetServer;
let crm: TargetServer;
let env: Record<string, string>;
const auditLog = new LogCapture();
const principal = `cli:${userInfo().username}`;

beforeAll(async () => {
  erp = await TargetServer.start();
  crm = await TargetServer.start((n) => ({ status: n === 0 ? 400 : 200 }));
  const targets = [
    { name: 'erp', url: erp.url, events: ['*'] },
    { name: 'crm', url: crm.url, events: ['payment.result'] },
  ];
  f = buildForwarding(platform, targets);
  const file = path.join(tempDir('cli'), 'config.yaml');
  writeFileSync(file, stringify({ targets }));
  env = {
    CONFIG_FILE: file,
    REDIS_URL: f.config.redisUrl,
    QUEUE_PREFIX: f.config.queuePrefix,
    ADMIN_ALLOW_CORRECTIONS: 'true',
  };
});
afterAll(async () => {
  await f.close();
  await erp.close();
  await crm.close();
});

async function cli(...argv: string[]): Promise<{ code: number; text: string }> {
  const lines: string[] = [];
  const code = await runCli(argv, { env, out: (l) => lines.push(l), log: auditLog.stream });
  return { code, text: lines.join('\n') };
}

function audited(action: string): Record<string, unknown>[] {
  return auditLog.lines.filter((l) => l.audit === true && l.action === action);
}

it('queues: prints every queue in a table', async () => {
  const { code, text } = await cli('queues');
  expect(code).toBe(0);
  expect(text).toMatch(/^QUEUE\s+WAITING\s+ACTIVE\s+DELAYED\s+FAILED\s+COMPLETED\s+OLDEST WAITING\s+PAUSED/);
  for (const q of ['payment.result', 'quarantine', 'deliver.erp'])
    expect(text).toMatch(new RegExp(`^${q.replace('.', '\\.')}\\s+\\d`, 'm'));
});

it('event: shows an event by id and by request_id with its deliveries and its later copies', async () => {
  const body = '{"type":"MERCH","data":{"request_id":"CLI-REQ-7"}}';
  await platform.send(f.receiver.app, platform.signed('payee.result', { body })).expect(200);
  await platform.send(f.receiver.app, platform.signed('payee.result', { body })).expect(200); // a platform retry: a duplicate
  await erp.waitFor(() => erp.successes().length === 1);
  const eventId = String(erp.requests[0]!.headers['webhook-id']);
  await new Promise((r) => setTimeout(r, 200));

  const byId = await cli('event', eventId);
  expect(byId.code).toBe(0);
  expect(byId.text).toContain(`${eventId}  payee.result`);
  expect(byId.text).toMatch(/^erp\s+completed\s+1/m);
  expect(byId.text).toMatch(
    /^ {2}copies after the first: 1 duplicate, 0 repeats refused; the last at \d{4}-\d\d-\d\dT[\d:.]+Z$/m,
  );
  const byRequest = await cli('event', '--request-id', 'CLI-REQ-7');
  expect(byRequest.text).toContain(eventId);
  expect((await cli('event', 'evt_missing')).code).toBe(1);
});

it('quarantine and target: list, replay with a corrected body, pause and resume', async () => {
  await platform.send(f.receiver.app, platform.signed('payment.result', { body: '<xml/>' })).expect(200);
  const listed = await cli('quarantine', 'list');
  expect(listed.text).toContain('1 quarantined');
  const id = /^(\S+)\s+payment\.result/m.exec(listed.text)![1]!;

  expect((await cli('target', 'pause', 'erp')).text).toBe('erp: paused');
  expect((await cli('target', 'list')).text).toMatch(/^erp\s+yes/m);
  const fixedBody = path.join(tempDir('body'), 'fixed.json');
  writeFileSync(fixedBody, '{"type":"MERCH","data":{"fixed":1}}');
  const replay = await cli('quarantine', 'replay', id, '--body', fixedBody);
  expect(replay.code).toBe(0);
  expect(replay.text).toMatch(/^queued\s+/);
  const before = erp.requests.length;
  await new Promise((r) => setTimeout(r, 300));
  expect(erp.requests.length).toBe(before);

  expect((await cli('target', 'resume', 'erp')).text).toBe('erp: resumed');
  await erp.waitFor(() => erp.requests.length === before + 1);

  expect(audited('target.pause')).toEqual([
    expect.objectContaining({
      level: 'info',
      message: 'admin action',
      principal,
      from: expect.any(String),
      target: 'erp',
      at: expect.any(String),
    }),
  ]);
  expect(audited('target.resume')).toEqual([expect.objectContaining({ principal, target: 'erp' })]);
  expect(audited('quarantine.replay')).toEqual([
    expect.objectContaining({
      principal,
      items: [id],
      corrected: true,
      outcomes: ['queued'],
      eventIds: [expect.stringMatching(/^evt_/)],
    }),
  ]);
  expect(auditLog.raw.join('\n')).not.toContain('"fixed":1');
});

it('dlq: lists a dead letter, replays it, and writes the audit line the admin API writes', async () => {
  await platform
    .send(
      f.receiver.app,
      platform.signed('payment.result', { body: '{"type":"MERCH","data":{"request_id":"CLI-DLQ-1"}}' }),
    )
    .expect(200);
  await crm.waitFor(() => crm.requests.length === 1 && crm.requests[0]!.answered === 400);
  const eventId = String(crm.requests[0]!.headers['webhook-id']);
  let listed = { code: 0, text: '' };
  await waitUntil(
    async () => (listed = await cli('dlq', 'list', '--target', 'crm')).text.includes(eventId),
    10000,
    'the dead letter listed',
  );
  expect(listed.text).toContain(`crm/${eventId}`);

  const replay = await cli('dlq', 'replay', `crm/${eventId}`, 'crm/evt_nope');
  expect(replay.text).toContain(`replayed   crm/${eventId}`);
  await crm.waitFor(() => crm.successes().length === 1);
  expect(audited('dead-letters.replay')).toEqual([
    expect.objectContaining({ principal, items: [`crm/${eventId}`], notFound: ['crm/evt_nope'], replayed: 1 }),
  ]);

  await cli('dlq', 'replay', '--all', '--target', 'crm');
  expect(audited('dead-letters.replay')[1]).toMatchObject({
    principal,
    items: [],
    replayed: 0,
    filter: { all: true, target: 'crm' },
  });
});
