import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { runCli } from '../src/cli/run';
import { FakePlatform } from './support/platform';
import { freshDatabase } from './support/postgres';
import { RedisServer } from './support/redis-server';
import { ServiceProcess } from './support/service-process';
import { TargetServer } from './support/target-server';
import { tempDir } from './support/temp-dir';
import { uniquePrefix } from './support/harness';
import { queryArchive, waitForCount } from './support/archive';

/**
 * History beyond Redis: once Redis has forgotten everything (FLUSHALL), the event view, the request_id
 * lookup, the console and the CLI still find the notification, from the archive, with its body and how
 * its delivery ended.
 */

const platform = new FakePlatform();
const USER = 'history-operator';
const PASSWORD = 'history-password-1';
let redis: RedisServer;
let target: TargetServer;
let service: ServiceProcess | undefined;
let env: Record<string, string>;

afterAll(async () => {
  await service?.kill('SIGTERM');
  await target?.close();
  await redis?.stop();
});

const auth = { authorization: `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}` };
async function admin(pathname: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://127.0.0.1:${service!.adminPort}${pathname}`, { headers: auth });
  return { status: res.status, text: await res.text() };
}

it('after FLUSHALL, the event view, the request_id lookup, the console and the CLI answer from the archive', async () => {
  redis = await RedisServer.start();
  target = await TargetServer.start();
  const url = await freshDatabase('archive_history');
  const configFile = path.join(tempDir('archive-history'), 'config.json');
  writeFileSync(configFile, JSON.stringify({ targets: [{ name: 'ledger', url: target.url, events: ['*'] }] }));
  env = {
    REDIS_URL: redis.url,
    QUEUE_PREFIX: uniquePrefix(),
    PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
    ARCHIVE_URL: url,
    CONFIG_FILE: configFile,
    ADMIN_USER: USER,
    ADMIN_PASSWORD: PASSWORD,
  };
  service = await ServiceProcess.startQuiet(env);
  const n = platform.signed('payment.result');
  const requestId = (JSON.parse(n.body.toString()) as { data: { request_id: string } }).data.request_id;
  const res = await fetch(`http://127.0.0.1:${service.port}${n.target}`, {
    method: 'POST',
    headers: n.headers,
    body: n.body,
  });
  expect(res.status).toBe(200);
  const delivered = () =>
    queryArchive<{ n: string }>(url, "SELECT count(*) AS n FROM webhook_archive.deliveries WHERE state = 'delivered'")
      .then((r) => Number(r[0]?.n))
      .catch(() => 0);
  expect(await waitForCount(delivered, 1)).toBe(1);
  const [row] = await queryArchive<{ event_id: string }>(url, 'SELECT event_id FROM webhook_archive.notifications');
  const eventId = row!.event_id;

  const client = new Redis(redis.url);
  await client.flushall();
  client.disconnect();

  const view = await admin(`/admin/api/events/${eventId}`);
  expect(view.status).toBe(200);
  const event = JSON.parse(view.text) as Record<string, unknown>;
  expect(event).toMatchObject({
    source: 'archive',
    eventId,
    eventType: 'payment.result',
    payload: JSON.parse(n.body.toString()) as unknown,
    deliveries: [{ target: 'ledger', state: 'delivered', attemptsMade: 1 }],
  });

  const byRequest = await admin(`/admin/api/events?requestId=${requestId}`);
  expect(byRequest.status).toBe(200);
  expect(JSON.parse(byRequest.text)).toMatchObject({ requestId, events: [{ source: 'archive', eventId }] });

  const search = await admin(`/admin/console/events?q=${requestId}`);
  expect(search.status).toBe(200);
  expect(search.text).toContain(eventId);
  expect(search.text).toContain('data-source="archive"');
  const page = await admin(`/admin/console/events/${eventId}`);
  expect(page.status).toBe(200);
  expect(page.text).toContain('from the archive');
  expect(page.text).toContain('ledger');
  const readme = await admin(`/admin/console/events/${eventId}/evidence/README`);
  expect(readme.status).toBe(200);
  expect(readme.text).toContain('openssl dgst -sha256 -verify public-key.pem -signature signature.bin signed.txt');

  const lines: string[] = [];
  const code = await runCli(['event', '--request-id', requestId], { env, out: (l) => lines.push(l) });
  expect(code).toBe(0);
  expect(lines.join('\n')).toContain(`${eventId}  payment.result`);
  expect(lines.join('\n')).toContain('from the archive');
  expect(lines.join('\n')).toMatch(/ledger\s+delivered\s+1/);

  // The service goes on archiving after the flush: the archiver makes its stream's group again.
  const after = platform.signed('payment.result');
  await fetch(`http://127.0.0.1:${service.port}${after.target}`, {
    method: 'POST',
    headers: after.headers,
    body: after.body,
  });
  const rows = () =>
    queryArchive<{ n: string }>(url, 'SELECT count(*) AS n FROM webhook_archive.notifications').then((r) =>
      Number(r[0]?.n),
    );
  expect(await waitForCount(rows, 2)).toBe(2);
}, 90_000);
