import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { Client } from 'pg';
import { stringify } from 'yaml';
import { buildForwarding, waitUntil, type ForwardingHarness } from './support/forwarding-harness';
import { testRedisUrl, uniquePrefix } from './support/harness';
import { FakePlatform } from './support/platform';
import { freshDatabase, PostgresServer } from './support/postgres';
import { postRaw } from './support/post-raw';
import { ServiceProcess } from './support/service-process';
import { OtlpReceiver } from './support/otlp-receiver';
import { tempDir } from './support/temp-dir';
import { runCli } from '../src/cli/run';
import { eventIdFor } from '../src/model/ids';
import { inboxDefinition } from '../src/forwarding/destinations/postgres-row';

// A PostgreSQL of its own for the outage (stopped as a crash would, started again on the same port),
// and the service in its own processes for the worker killed with SIGKILL.
jest.setTimeout(120000);

const platform = new FakePlatform();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const started: ServiceProcess[] = [];
let f: ForwardingHarness | undefined;

afterEach(async () => {
  await f?.close();
  f = undefined;
  await Promise.all(started.splice(0).map((s) => s.kill('SIGKILL')));
});

function body(i: number): string {
  return JSON.stringify({ type: 'PAY', data: { request_id: `BATCH-${i}`, amount: '10.00' } });
}

async function query<T extends Record<string, unknown>>(url: string, sql: string): Promise<T[]> {
  const db = new Client({ connectionString: url });
  await db.connect();
  try {
    return (await db.query<T>(sql)).rows;
  } finally {
    await db.end();
  }
}

/** How many rows the inbox holds, and how many distinct ids; 0 while the server is down. */
async function counted(url: string): Promise<{ rows: number; ids: number }> {
  const sql = 'SELECT count(*)::int AS rows, count(DISTINCT webhook_id)::int AS ids FROM inbox';
  return (await query<{ rows: number; ids: number }>(url, sql).catch(() => [{ rows: 0, ids: 0 }]))[0]!;
}

describe('postgres destination: outages', () => {
  it('when PostgreSQL is down for 10 s during a batch, then every event is inserted once after it returns', async () => {
    const server = await PostgresServer.start();
    try {
      const url = server.url();
      await query(url, inboxDefinition('inbox'));
      f = buildForwarding(platform, [
        {
          name: 'ledger',
          destination: { type: 'postgres', url, table: 'inbox' },
          concurrency: 4,
          timeoutMs: 1000,
          // 20 a second: the batch is still arriving in the table when the server goes.
          rateLimit: { max: 20, perMs: 1000 },
          maxAttempts: 40,
          backoff: { initialMs: 200, maxMs: 1000 },
        },
      ]);
      const ids: string[] = [];
      for (let i = 0; i < 100; i++) {
        await platform.send(f.receiver.app, platform.signed('payment.result', { body: body(i) })).expect(200);
        ids.push(eventIdFor('payment.result', 'production', Buffer.from(body(i))));
      }
      await waitUntil(async () => (await counted(url)).rows >= 20, 20000, '20 rows');
      await server.stop('immediate');
      await sleep(10_000);
      await server.start();
      await waitUntil(async () => (await counted(url)).rows === 100, 60000, '100 rows');

      const rows = await query<{ webhook_id: string }>(url, 'SELECT webhook_id FROM inbox');
      expect(rows.map((r) => r.webhook_id).sort()).toEqual([...ids].sort());
      expect(await f.deadLetters.list({ target: 'ledger' })).toEqual([]);
      expect(f.logs.lines.filter((l) => l.message === 'PostgreSQL connection lost; reconnecting with backoff')).toEqual(
        [expect.objectContaining({ target: 'ledger' })],
      );
      // The last rows can be visible in the table before their inserts' answers reach the worker.
      await waitUntil(
        async () => f!.logs.find((l) => l.message === 'PostgreSQL connection restored') !== undefined,
        10000,
        'the restored line',
      );
    } finally {
      await f?.close();
      f = undefined;
      await server.stop('fast').catch(() => undefined);
      await server.remove();
    }
  });

  it('when the worker is killed with SIGKILL in the middle of 100, then a new one leaves 100 rows; a resend adds none', async () => {
    const url = await freshDatabase('pgkill');
    const configFile = path.join(tempDir('pgkill'), 'config.yaml');
    const target = {
      name: 'ledger',
      events: ['*'],
      // createTable: the first worker makes the table at start-up.
      destination: { type: 'postgres', url, table: 'inbox', createTable: true },
      concurrency: 4,
      rateLimit: { max: 25, perMs: 1000 },
      backoff: { initialMs: 200, maxMs: 1000 },
    };
    writeFileSync(configFile, stringify({ targets: [target] }));
    const env = {
      REDIS_URL: testRedisUrl(),
      QUEUE_PREFIX: uniquePrefix(),
      PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
      CONFIG_FILE: configFile,
      WORKER_LOCK_DURATION_MS: '1500',
      WORKER_STALLED_INTERVAL_MS: '500',
    };
    const start = async (role: string) => {
      const s = await ServiceProcess.start({ ...env, ROLE: role });
      started.push(s);
      return s;
    };
    const receiver = await start('receiver');
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) {
      const n = platform.signed('payment.result', { body: body(i) });
      await postRaw(`http://127.0.0.1:${receiver.port}`, n.target, n.headers, n.body).expect(200);
      ids.push(eventIdFor('payment.result', 'production', Buffer.from(body(i))));
    }
    // The worker starts on the whole batch, so the kill falls in its middle however slowly it was sent.
    const first = await start('worker');
    expect(first.lines.find((l) => l.message === 'postgres destination')).toMatchObject({
      created: 'target ledger: created table "inbox" (createTable: true)',
    });
    await waitUntil(async () => (await counted(url)).rows >= 30, 20000, '30 rows');
    await first.kill('SIGKILL');
    expect((await counted(url)).rows).toBeLessThan(100);
    const second = await start('worker');
    await waitUntil(async () => (await counted(url)).rows === 100, 60000, '100 rows');
    expect(await counted(url)).toEqual({ rows: 100, ids: 100 });
    const rows = await query<{ webhook_id: string }>(url, 'SELECT webhook_id FROM inbox');
    expect(rows.map((r) => r.webhook_id).sort()).toEqual([...ids].sort());

    // A resend of an event already inserted: delivered again, with nothing written.
    const deliveredFirst = () => second.lines.filter((l) => l.message === 'delivered' && l.eventId === ids[0]).length;
    const before = deliveredFirst();
    const code = await runCli(['event', 'resend', ids[0]!, '--target', 'ledger'], {
      env,
      out: () => undefined,
      log: new PassThrough(), // the audit line
    });
    expect(code).toBe(0);
    await waitUntil(() => deliveredFirst() === before + 1, 15000, 'the resend delivered');
    expect(await counted(url)).toEqual({ rows: 100, ids: 100 });
  });

  it('with tracing on, each row carries the trace id of the notification it came from', async () => {
    const otlp = await OtlpReceiver.start();
    try {
      const url = await freshDatabase('pgtrace');
      const configFile = path.join(tempDir('pgtrace'), 'config.yaml');
      const destination = { type: 'postgres', url, table: 'inbox', createTable: true };
      writeFileSync(configFile, stringify({ targets: [{ name: 'ledger', events: ['*'], destination }] }));
      const s = await ServiceProcess.start({
        REDIS_URL: testRedisUrl(),
        QUEUE_PREFIX: uniquePrefix(),
        PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
        CONFIG_FILE: configFile,
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_TRACES_SAMPLER: 'always_on',
        OTEL_BSP_SCHEDULE_DELAY: '100',
      });
      started.push(s);
      const n = platform.signed('payment.result', { body: body(1) });
      await postRaw(`http://127.0.0.1:${s.port}`, n.target, n.headers, n.body).expect(200);
      const eventId = eventIdFor('payment.result', 'production', Buffer.from(body(1)));
      await waitUntil(async () => (await counted(url)).rows === 1, 15000, 'the row');
      await waitUntil(() => otlp.spans.some((sp) => sp.attributes['webhook.event_id'] === eventId), 15000, 'spans');

      const [row] = await query<{ trace_id: string }>(url, 'SELECT trace_id FROM inbox');
      const server = otlp.spans.find((sp) => sp.kind === 2 && sp.attributes['webhook.event_id'] === eventId);
      expect(row!.trace_id).toMatch(/^[0-9a-f]{32}$/);
      expect(row!.trace_id).toBe(server!.traceId);
    } finally {
      await otlp.close();
    }
  });

  it('a missing table stops the service at start-up, with the reason', async () => {
    const url = await freshDatabase('pgstart');
    const configFile = path.join(tempDir('pgstart'), 'config.yaml');
    const destination = { type: 'postgres', url, table: 'nope' };
    writeFileSync(configFile, stringify({ targets: [{ name: 'ledger', events: ['*'], destination }] }));
    const env = {
      REDIS_URL: testRedisUrl(),
      QUEUE_PREFIX: uniquePrefix(),
      PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
      CONFIG_FILE: configFile,
    };

    await expect(ServiceProcess.start(env)).rejects.toThrow(
      /exit 78\)[\s\S]*target "ledger": table "nope" does not exist: create it \(docs\/forwarding.md\) or set createTable: true/,
    );
  });
});
