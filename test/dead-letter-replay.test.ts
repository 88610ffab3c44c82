import { writeFileSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { stringify } from 'yaml';
import { runCli } from '../src/cli/run';
import { ADMIN_TEST_TOKEN, buildForwarding, waitUntil, type ForwardingHarness } from './support/forwarding-harness';
import { FakePlatform } from './support/platform';
import { TargetServer } from './support/target-server';
import { tempDir } from './support/temp-dir';

const platform = new FakePlatform();
const TOKEN = ADMIN_TEST_TOKEN;
let f: ForwardingHarness;
let erp: TargetServer;
let healthy = false;

beforeAll(async () => {
  erp = await TargetServer.start(() => ({ status: healthy ? 200 : 502 }));
  f = buildForwarding(platform, [{ name: 'erp', url: erp.url, maxAttempts: 2 }]);
  for (const i of [1, 2, 3]) {
    await platform
      .send(f.receiver.app, platform.signed('payment.result', { body: `{"type":"MERCH","data":{"i":${i}}}` }))
      .expect(200);
  }
  await waitUntil(async () => (await f.deadLetters.list()).length === 3, 10000, 'three dead letters');
  healthy = true;
});
afterAll(async () => {
  await f.close();
  await erp.close();
});

function cliEnv(): Record<string, string> {
  const dir = tempDir('cli');
  const file = path.join(dir, 'config.yaml');
  writeFileSync(file, stringify({ targets: [{ name: 'erp', url: erp.url, events: ['*'] }] }));
  return { CONFIG_FILE: file, REDIS_URL: f.config.redisUrl, QUEUE_PREFIX: f.config.queuePrefix };
}

function deliveredIds(): string[] {
  return erp.successes().map((r) => String(r.headers['webhook-id']));
}

describe('replaying dead letters', () => {
  it('through the CLI: list shows them in a table, and a replayed one arrives with its webhook-id', async () => {
    const lines: string[] = [];
    expect(await runCli(['dlq', 'list', '--target', 'erp'], { env: cliEnv(), out: (l) => lines.push(l) })).toBe(0);
    expect(lines.join('\n')).toMatch(/ID\s+EVENT TYPE\s+FAILED AT\s+ATTEMPTS\s+STATUS\s+ERROR/);
    expect(lines.join('\n')).toContain('3 dead letter(s)');

    const [first] = await f.deadLetters.list();
    const out: string[] = [];
    const code = await runCli(['dlq', 'replay', first!.id], { env: cliEnv(), out: (l) => out.push(l) });

    expect(code).toBe(0);
    expect(out).toEqual([`replayed   ${first!.id}`]);
    await erp.waitFor(() => deliveredIds().includes(first!.eventId));
    expect(await f.deadLetters.list()).toHaveLength(2);
  });

  describe('through the admin endpoint', () => {
    const app = () => f.admin;

    it('without credentials, then 401', async () => {
      await request(app()).get('/admin/api/dead-letters').expect(401);
      await request(app()).post('/admin/api/dead-letters/replay').send({ all: true }).expect(401);
      await request(app())
        .get('/admin/api/dead-letters')
        .set('authorization', 'Bearer wrong-token-0000000000')
        .expect(401);
    });

    it('lists by target and event type, and a replayed one arrives with its webhook-id', async () => {
      const list = await request(app())
        .get('/admin/api/dead-letters?target=erp&eventType=payment.result')
        .set('authorization', `Bearer ${TOKEN}`)
        .expect(200);
      expect(list.body.deadLetters).toHaveLength(2);
      const none = await request(app())
        .get('/admin/api/dead-letters?eventType=fx.result')
        .set('authorization', `Bearer ${TOKEN}`)
        .expect(200);
      expect(none.body.deadLetters).toHaveLength(0);

      const target = list.body.deadLetters[0];
      const res = await request(app())
        .post('/admin/api/dead-letters/replay')
        .set('authorization', `Bearer ${TOKEN}`)
        .send({ ids: [target.id] })
        .expect(200);

      expect(res.body).toEqual({ replayed: [target.id], notFound: [] });
      await erp.waitFor(() => deliveredIds().includes(target.eventId));
      expect(f.adminLogs.find((l) => l.audit === true && l.action === 'dead-letters.replay')).toMatchObject({
        items: [target.id],
      });
    });

    it('replays all that match, and each arrives once', async () => {
      const res = await request(app())
        .post('/admin/api/dead-letters/replay')
        .set('authorization', `Bearer ${TOKEN}`)
        .send({ all: true, target: 'erp' })
        .expect(200);
      expect(res.body.replayed).toHaveLength(1);
      await erp.waitFor(() => deliveredIds().length === 3);
      expect(new Set(deliveredIds()).size).toBe(3);
      expect(await f.deadLetters.list()).toHaveLength(0);
    });
  });
});
