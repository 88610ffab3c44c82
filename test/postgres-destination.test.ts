import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import request from 'supertest';
import { stringify } from 'yaml';
import { ADMIN_TEST_TOKEN, buildForwarding, waitUntil, type ForwardingHarness } from './support/forwarding-harness';
import { LogCapture, testRedisUrl } from './support/harness';
import { FakePlatform } from './support/platform';
import { freshDatabase } from './support/postgres';
import { TargetServer } from './support/target-server';
import { tempDir } from './support/temp-dir';
import { runCli } from '../src/cli/run';
import { cliFailure } from '../src/cli/errors';
import { loadConfig } from '../src/config/load';
import { type ConfigError } from '../src/config/errors';
import { eventIdFor } from '../src/model/ids';
import { createTargetControl } from '../src/operations/targets';
import { createReloader } from '../src/operations/reload';
import { createLogger } from '../src/logging/logger';
import type { DeliveryFailure } from '../src/model/jobs';

jest.setTimeout(60000);

const platform = new FakePlatform();
const bearer = { authorization: `Bearer ${ADMIN_TEST_TOKEN}` };
const INBOX = `CREATE TABLE inbox (webhook_id text PRIMARY KEY, type text NOT NULL, environment text,
  "timestamp" timestamptz NOT NULL, received_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  body jsonb NOT NULL, body_text text NOT NULL, trace_id text)`;

let f: ForwardingHarness | undefined;
const servers: TargetServer[] = [];
const clients: Client[] = [];

afterEach(async () => {
  await f?.close();
  f = undefined;
  await Promise.all(servers.splice(0).map((s) => s.close()));
  await Promise.all(clients.splice(0).map((c) => c.end()));
});

/** A fresh database with the documented inbox table; a client on it. */
async function inboxDatabase(extraSql: string[] = []): Promise<{ url: string; db: Client }> {
  const url = await freshDatabase('pgdest');
  const db = new Client({ connectionString: url });
  await db.connect();
  clients.push(db);
  await db.query(INBOX);
  for (const sql of extraSql) await db.query(sql);
  return { url, db };
}

/** Sends one payment.result with `data`; answers its event id once acknowledged. */
async function notify(data: Record<string, unknown> | string): Promise<string> {
  const body = typeof data === 'string' ? data : JSON.stringify({ type: 'PAY', data });
  await platform.send(f!.receiver.app, platform.signed('payment.result', { body })).expect(200);
  return eventIdFor('payment.result', 'production', Buffer.from(body));
}

async function rowCount(db: Client): Promise<number> {
  return Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM inbox')).rows[0]!.n);
}

/** The delivery's attempts to `target` as the event view shows them, every series. */
async function attemptsOf(eventId: string, target: string) {
  const res = await request(f!.admin).get(`/admin/api/events/${eventId}`).set(bearer).expect(200);
  const delivery = res.body.deliveries.find((d: { target: string }) => d.target === target);
  return (delivery.series as { attempts: Record<string, unknown>[] }[]).flatMap((s) => s.attempts);
}

// Exact text on purpose: 0.10 keeps its trailing zero and the second number has more digits than a double holds.
const EXACT = (i: number) =>
  `{"type":"PAY","data":{"request_id":"PAY-${i}","amount":0.10,"total":12345678901234567.89,"currency":"USD"}}`;
const TRANSFORM = `function transform(event) {
  const d = event.data.data;
  return { payment: d.request_id, amount: d.amount, total: d.total, spaced: [1,  2], at: event.timestamp };
}`;

describe('postgres destination', () => {
  it('50 notifications give 50 rows whose body is byte for byte what an HTTP target received, exact numbers through a transform', async () => {
    const { url, db } = await inboxDatabase();
    const http = await TargetServer.start();
    servers.push(http);
    f = buildForwarding(platform, [
      { name: 'ledger', destination: { type: 'postgres', url, table: 'inbox' }, transform: TRANSFORM },
      { name: 'erp', url: http.url, transform: TRANSFORM },
    ]);

    const ids: string[] = [];
    for (let i = 0; i < 50; i += 10)
      ids.push(...(await Promise.all(Array.from({ length: 10 }, (_, j) => notify(EXACT(i + j))))));
    await waitUntil(async () => (await rowCount(db)) === 50 && http.successes().length === 50, 20000, '50 rows');

    const sent = new Map(http.successes().map((r) => [String(r.headers['webhook-id']), r.body.toString('utf8')]));
    const rows = (
      await db.query<Record<string, string | null>>(
        `SELECT webhook_id, type, environment, "timestamp"::text AS ts, body_text, body->>'amount' AS amount,
           body->'total' AS total, body::text AS jsonb_text, trace_id FROM inbox`,
      )
    ).rows;
    expect(rows.map((r) => r.webhook_id).sort()).toEqual([...ids].sort());
    for (const row of rows) {
      expect(row.body_text).toBe(sent.get(row.webhook_id!));
      expect(row.body_text).toContain('"amount":0.10,"total":12345678901234567.89');
      // jsonb keeps each number's text (numeric keeps its scale), not the spacing or key order of the whole.
      expect(row.amount).toBe('0.10');
      expect(row.jsonb_text).toContain('"total": 12345678901234567.89');
      expect(row).toMatchObject({ type: 'payment.result', environment: 'production', trace_id: null });
      expect(row.ts).toMatch(/^\d{4}-\d\d-\d\d /);
    }
    expect(await attemptsOf(ids[0]!, 'ledger')).toEqual([
      expect.objectContaining({ outcome: 'delivered', confirmed: 'inserted into inbox' }),
    ]);
  });

  it('an ordered target inserts each key’s events in the order received, even when inserts take uneven times', async () => {
    // A trigger that sleeps a random 0-20 ms per insert: unordered, a key's later event would often overtake.
    const { url, db } = await inboxDatabase([
      `CREATE FUNCTION uneven() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN PERFORM pg_sleep(random() * 0.02); RETURN NEW; END $$`,
      'CREATE TRIGGER uneven BEFORE INSERT ON inbox FOR EACH ROW EXECUTE FUNCTION uneven()',
    ]);
    f = buildForwarding(platform, [
      {
        name: 'ledger',
        destination: { type: 'postgres', url, table: 'inbox' },
        concurrency: 8,
        order: { key: 'data.request_id' },
      },
    ]);
    // Paused while the 40 arrive, so that the worker finds them all waiting at once.
    const control = createTargetControl(f.pipeline);
    await control.pause('ledger');
    const keys = ['A', 'B', 'C', 'D'];
    for (let seq = 0; seq < 10; seq++) await Promise.all(keys.map((k) => notify({ request_id: k, seq })));
    await control.resume('ledger');
    await waitUntil(async () => (await rowCount(db)) === 40, 20000, '40 rows');

    const rows = (
      await db.query<{ key: string; seq: number }>(
        `SELECT body #>> '{data,data,request_id}' AS key, (body #>> '{data,data,seq}')::int AS seq
           FROM inbox ORDER BY received_at`,
      )
    ).rows;
    for (const k of keys)
      expect(rows.filter((r) => r.key === k).map((r) => r.seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('a table without INSERT permission dead-letters at once with the database’s reason and no password', async () => {
    const { url, db } = await inboxDatabase();
    const role = `reader_${Date.now()}`;
    await db.query(`CREATE ROLE ${role} LOGIN PASSWORD 'pw-sekrit-4711'`);
    await db.query(`GRANT SELECT ON inbox TO ${role}`);
    const limited = new URL(url);
    [limited.username, limited.password] = [role, 'pw-sekrit-4711'];
    f = buildForwarding(platform, [
      { name: 'ledger', destination: { type: 'postgres', url: limited.toString(), table: 'inbox' }, maxAttempts: 5 },
    ]);

    const eventId = await notify({ request_id: 'DENIED' });
    await waitUntil(async () => (await f!.deadLetters.list({ target: 'ledger' })).length === 1, 10000, 'dead letter');

    const [failed] = (await attemptsOf(eventId, 'ledger')) as unknown as DeliveryFailure[];
    expect(failed).toMatchObject({ attempt: 1, errorClass: 'database' });
    expect(failed!.error).toMatch(
      /^PostgreSQL refused the insert into "inbox": permission denied for table inbox \(SQLSTATE 42501\) after \d+ ms \(not retried\)$/,
    );
    expect(JSON.stringify(await attemptsOf(eventId, 'ledger'))).not.toContain('pw-sekrit-4711');
    expect(f.logs.raw.join('\n')).not.toContain('pw-sekrit-4711');
    expect(await rowCount(db)).toBe(0);
    await db.query(`REVOKE ALL ON inbox FROM ${role}`);
    await db.query(`DROP ROLE ${role}`);
  });

  it('an insert committed after its answer was lost: the replayed dead letter and a resend add no row, and say so', async () => {
    // The first insert commits only after the target's timeout: the attempt fails, the row is there.
    const { url, db } = await inboxDatabase([
      `CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN PERFORM pg_sleep(1.5); RETURN NEW; END $$`,
      'CREATE TRIGGER slow BEFORE INSERT ON inbox FOR EACH ROW EXECUTE FUNCTION slow()',
    ]);
    f = buildForwarding(platform, [
      { name: 'ledger', destination: { type: 'postgres', url, table: 'inbox' }, timeoutMs: 500, maxAttempts: 1 },
    ]);
    const eventId = await notify({ request_id: 'LOST-ANSWER' });
    await waitUntil(async () => (await f!.deadLetters.list({ target: 'ledger' })).length === 1, 10000, 'dead letter');
    await waitUntil(async () => (await rowCount(db)) === 1, 5000, 'the late commit');
    await db.query('DROP TRIGGER slow ON inbox');

    const [dead] = await f.deadLetters.list({ target: 'ledger' });
    await request(f.admin)
      .post('/admin/api/dead-letters/replay')
      .set(bearer)
      .send({ ids: [dead!.id] })
      .expect(200);
    await waitUntil(async () => (await attemptsOf(eventId, 'ledger')).some((a) => a.outcome === 'delivered'), 10000);
    await request(f.admin).post(`/admin/api/events/${eventId}/resend`).set(bearer).send({}).expect(200);
    await waitUntil(
      async () => (await attemptsOf(eventId, 'ledger')).filter((a) => a.outcome === 'delivered').length === 2,
      10000,
      'the resend delivered',
    );

    const attempts = await attemptsOf(eventId, 'ledger');
    expect(attempts[0]).toMatchObject({ outcome: 'failed', errorClass: 'timeout' });
    const already = 'already in inbox (webhook_id exists): nothing written';
    expect(attempts.slice(1)).toEqual([
      expect.objectContaining({ outcome: 'delivered', confirmed: already }),
      expect.objectContaining({ outcome: 'delivered', confirmed: already }),
    ]);
    expect(await rowCount(db)).toBe(1);
  });
});

describe('postgres destination: the table, checked before deliveries', () => {
  function writeConfig(targets: object[]): string {
    const file = path.join(tempDir('pgdest'), 'config.yaml');
    writeFileSync(file, stringify({ targets }));
    return file;
  }

  /** `config check`'s exit code (78 for a refused configuration, as cli/main.ts maps it) and what it printed. */
  async function configCheck(file: string) {
    const out: string[] = [];
    try {
      const code = await runCli(['config', 'check'], {
        env: { PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64, CONFIG_FILE: file, REDIS_URL: testRedisUrl() },
        out: (l) => out.push(l),
      });
      return { code, text: out.join('\n') };
    } catch (err) {
      return { code: cliFailure(err).exitCode, text: [...out, cliFailure(err).line].join('\n') };
    }
  }

  it('config check fails on a missing table or column, passes with createTable, and masks the password', async () => {
    const url = await freshDatabase('pgcheck');
    const db = new Client({ connectionString: url });
    await db.connect();
    clients.push(db);
    await db.query('CREATE TABLE short (webhook_id text PRIMARY KEY, type text, body jsonb)');
    await db.query(INBOX);
    const withPassword = new URL(url);
    withPassword.password = 'pw-check-0815';
    const target = (name: string, table: string, extra: object = {}) => ({
      name,
      events: ['*'],
      destination: { type: 'postgres', url: withPassword.toString(), table, ...extra },
    });

    const missing = await configCheck(writeConfig([target('ledger', 'nope')]));
    expect(missing.code).toBe(78);
    expect(missing.text).toContain(
      'target "ledger": table "nope" does not exist: create it (docs/forwarding.md) or set createTable: true',
    );
    const short = await configCheck(writeConfig([target('ledger', 'short')]));
    expect(short.code).toBe(78);
    expect(short.text).toContain(
      'target "ledger": table "short" has no column environment, timestamp, received_at, body_text, trace_id',
    );

    const ok = await configCheck(
      writeConfig([target('ledger', 'inbox'), target('fresh', 'inbox_new', { createTable: true })]),
    );
    expect(ok.code).toBe(0);
    expect(ok.text).toContain('  - ledger (postgres): reachable; table "inbox" has every column');
    expect(ok.text).toContain(
      '  - fresh (postgres): reachable; table "inbox_new" is missing and createTable creates it',
    );
    expect(ok.text).toContain(':***@127.0.0.1');
    expect(ok.text).not.toContain('pw-check-0815');
    // config check looks, and creates nothing.
    expect((await db.query("SELECT to_regclass('inbox_new') AS t")).rows[0].t).toBeNull();
  });

  it('a reload whose postgres target names a missing table is refused, and createTable makes it on the next', async () => {
    const url = await freshDatabase('pgreload');
    f = buildForwarding(platform, [{ name: 'erp', url: 'http://127.0.0.1:9/hook' }]);
    const destination = { type: 'postgres', url, table: 'inbox' };
    const file = path.join(tempDir('pgreload'), 'config.yaml');
    const env = {
      PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
      CONFIG_FILE: file,
      REDIS_URL: testRedisUrl(),
      QUEUE_PREFIX: f.config.queuePrefix,
    };
    const logs = new LogCapture();
    const reloader = createReloader({
      env,
      config: f.config,
      pipeline: f.pipeline,
      workers: f.workers,
      logger: createLogger('info', logs.stream),
    });

    writeFileSync(file, stringify({ targets: [{ name: 'ledger', events: ['*'], destination }] }));
    await expect(reloader.reload({ principal: 'test' })).rejects.toMatchObject({
      problems: [
        'target "ledger": table "inbox" does not exist: create it (docs/forwarding.md) or set createTable: true',
      ],
    });
    expect(f.pipeline.targets().map((t) => t.name)).toEqual(['erp']);

    const created = { ...destination, createTable: true };
    writeFileSync(file, stringify({ targets: [{ name: 'ledger', events: ['*'], destination: created }] }));
    await expect(reloader.reload({ principal: 'test' })).resolves.toMatchObject({
      added: ['ledger'],
      removed: ['erp'],
    });
    expect(logs.find((l) => l.message === 'postgres destination')).toMatchObject({
      created: 'target ledger: created table "inbox" (createTable: true)',
    });
    const eventId = await notify({ request_id: 'AFTER-RELOAD' });
    const db = new Client({ connectionString: url });
    await db.connect();
    clients.push(db);
    await waitUntil(async () => (await rowCount(db)) === 1, 10000, 'the row');
    expect((await db.query('SELECT webhook_id FROM inbox')).rows).toEqual([{ webhook_id: eventId }]);
  });

  it('a destination URL may be given as { env: NAME } or file:<path>, for the broker URLs too', async () => {
    const url = await freshDatabase('pgref');
    const secretFile = path.join(tempDir('pgref'), 'pg-url');
    writeFileSync(secretFile, `${url}\n`);
    const file = writeConfig([
      { name: 'from-env', events: ['*'], destination: { type: 'postgres', url: { env: 'LEDGER_PG_URL' }, table: 't' } },
      { name: 'from-file', events: ['*'], destination: { type: 'postgres', url: `file:${secretFile}`, table: 't' } },
      {
        name: 'bus',
        events: ['*'],
        destination: { type: 'amqp', url: { env: 'BUS_URL' }, exchange: 'events' },
      },
      {
        name: 'risk',
        events: ['*'],
        destination: { type: 'nats', servers: [{ env: 'NATS_URL' }], subject: 'platform.{type}' },
      },
    ]);
    const env = {
      PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
      CONFIG_FILE: file,
      LEDGER_PG_URL: url,
      BUS_URL: 'amqp://mq:pw@127.0.0.1:5672',
      NATS_URL: 'nats://127.0.0.1:4222',
    };

    const targets = loadConfig(env).targets;
    expect(targets.map((t) => t.destination)).toEqual([
      expect.objectContaining({ url }),
      expect.objectContaining({ url }),
      expect.objectContaining({ url: 'amqp://mq:pw@127.0.0.1:5672' }),
      expect.objectContaining({ servers: ['nats://127.0.0.1:4222'] }),
    ]);
    let problems: string[] = [];
    try {
      loadConfig({ ...env, BUS_URL: '', LEDGER_PG_URL: undefined as unknown as string });
    } catch (err) {
      problems = (err as ConfigError).problems;
    }
    expect(problems).toEqual([
      `targets.0.destination.url: environment variable LEDGER_PG_URL is not set (or empty) (in ${file})`,
      `targets.2.destination.url: environment variable BUS_URL is not set (or empty) (in ${file})`,
    ]);
  });
});
