import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { runCli } from '../src/cli/run';
import { generateTestKeyPair } from '../src/signing/keypair';
import { queryArchive } from './support/archive';
import { waitUntil } from './support/forwarding-harness';
import { uniquePrefix } from './support/harness';
import { FakePlatform } from './support/platform';
import { freshDatabase } from './support/postgres';
import { RedisServer } from './support/redis-server';
import { ServiceProcess } from './support/service-process';
import { environmentsAsking, StandInPlatform } from './support/stand-in-platform';
import { tempDir } from './support/temp-dir';
import { Pool } from 'pg';
import { sortEntries } from '../src/archive/entries';
import { migrate } from '../src/archive/migrations';
import { writeBatch } from '../src/archive/write-batch';

/**
 * Expectations in the evidence archive: each one's creation and every change reach
 * webhook_archive.expectations (the newest) and expectation_changes (each once), through the archive
 * stream, and once Redis has forgotten them (FLUSHALL) the request_id lookups tell them from there.
 */

jest.setTimeout(120000);

const ADMIN_TOKEN = 'expectation-archive-token-0123456789';
const platform = new FakePlatform();
const merchant = generateTestKeyPair();
let redis: RedisServer;
let standIn: StandInPlatform;
let service: ServiceProcess | undefined;

afterAll(async () => {
  await service?.kill('SIGTERM');
  await standIn?.close();
  await redis?.stop();
});

interface Listed {
  id: string;
  requestId: string;
  state: string;
  source?: string;
  metBy?: string;
}

interface Row extends Record<string, unknown> {
  id: string;
  request_id: string;
  state: string;
  revision: number;
  facts: Record<string, string>;
}

it('keeps created, met, missing_notification and cancelled expectations, and answers from them after FLUSHALL', async () => {
  redis = await RedisServer.start();
  standIn = await StandInPlatform.start(platform.keys, merchant.publicKeyPem);
  const url = await freshDatabase('expectation_archive');
  const configFile = path.join(tempDir('expectation-archive'), 'config.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      environments: environmentsAsking(standIn),
      expectations: { pollIntervalMs: 100, retryInitialMs: 50, retryMaxMs: 100 },
    }),
  );
  const env = {
    REDIS_URL: redis.url,
    QUEUE_PREFIX: uniquePrefix(),
    CONFIG_FILE: configFile,
    ARCHIVE_URL: url,
    ADMIN_TOKEN,
    TEST_MERCHANT_KEY: merchant.privateKeyPem,
  };
  service = await ServiceProcess.startQuiet(env);
  await service.waitForReady();
  const s = service;
  const admin = async (p: string, body?: unknown) => {
    const res = await fetch(`http://127.0.0.1:${s.adminPort}/admin/api${p}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, json: (await res.json()) as Record<string, any> };
  };
  const expectOne = async (requestId: string, dueInSeconds: number) => {
    const res = await admin('/expectations', { eventType: 'payment.result', requestId, dueInSeconds });
    expect(res.status).toBe(201);
    return res.json.expectation as Listed;
  };

  const met = await expectOne('ARCH-MET-1', 3600);
  const missing = await expectOne('ARCH-MISSING-1', 0);
  const cancelled = await expectOne('ARCH-CANCEL-1', 3600);
  expect((await admin(`/expectations/${cancelled.id}/cancel`, {})).status).toBe(200);
  const n = platform.signed('payment.result', {
    body: '{"type":"MERCH","data":{"request_id":"ARCH-MET-1","status":"SUCCESS"}}',
  });
  const res = await fetch(`http://127.0.0.1:${s.port}${n.target}`, {
    method: 'POST',
    headers: n.headers,
    body: n.body,
  });
  expect(res.status).toBe(200);

  const rows = () =>
    queryArchive<Row>(url, 'SELECT id, request_id, state, revision, facts FROM webhook_archive.expectations').catch(
      () => [] as Row[],
    );
  let archived: Row[] = [];
  await waitUntil(
    async () => {
      archived = await rows();
      const state = (id: string) => archived.find((r) => r.id === id)?.state;
      return (
        state(met.id) === 'met' && state(missing.id) === 'missing_notification' && state(cancelled.id) === 'cancelled'
      );
    },
    30000,
    'the three expectations archived in their settled states',
  );
  const row = (id: string) => archived.find((r) => r.id === id)!;
  expect(row(met.id).facts).toMatchObject({
    requestId: 'ARCH-MET-1',
    state: 'met',
    metBy: expect.stringMatching(/^evt_/),
  });
  // The platform's believed answer is kept with the expectation it settled: the body, and the signature that verified it.
  const answer = row(missing.id).facts;
  expect(JSON.parse(answer.answerBody!)).toMatchObject({ data: { request_id: 'ARCH-MISSING-1', status: 'SUCCESS' } });
  expect(Object.keys(JSON.parse(answer.answerSignature!) as object)).toEqual(
    expect.arrayContaining(['x-svc-sign', 'x-svc-timestamp', 'x-svc-nonce']),
  );
  expect(row(cancelled.id).facts).toMatchObject({ cancelledBy: expect.any(String) });

  // Each change once, in order: created, then what became of it.
  const changes = await queryArchive<{ expectation_id: string; state: string }>(
    url,
    'SELECT expectation_id, state FROM webhook_archive.expectation_changes ORDER BY expectation_id, revision',
  );
  const statesOf = (id: string) => changes.filter((c) => c.expectation_id === id).map((c) => c.state);
  expect(statesOf(met.id)).toEqual(['open', 'met']);
  expect(statesOf(cancelled.id)).toEqual(['open', 'cancelled']);
  expect(statesOf(missing.id)).toEqual(['open', 'overdue', 'missing_notification']);

  const client = new Redis(redis.url);
  await client.flushall();
  client.disconnect();

  const byRequest = await admin('/expectations?requestId=ARCH-MET-1');
  expect(byRequest.status).toBe(200);
  expect(byRequest.json.expectations).toEqual([
    expect.objectContaining({ id: met.id, state: 'met', source: 'archive', metBy: row(met.id).facts.metBy }),
  ]);
  const one = await admin(`/expectations/${missing.id}`);
  expect(one.status).toBe(200);
  expect(one.json.expectation).toMatchObject({ state: 'missing_notification', source: 'archive', attempts: 1 });
  const events = await admin('/events?requestId=ARCH-MET-1');
  expect(events.json).toMatchObject({
    events: [{ source: 'archive', eventId: row(met.id).facts.metBy }],
    expectations: [{ id: met.id, state: 'met', source: 'archive' }],
  });
  const page = await fetch(`http://127.0.0.1:${s.adminPort}/admin/console/events?q=ARCH-MISSING-1`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  expect(await page.text()).toContain(`id="${missing.id}"`);

  const lines: string[] = [];
  expect(await runCli(['event', '--request-id', 'ARCH-MET-1'], { env, out: (l) => lines.push(l) })).toBe(0);
  expect(lines.join('\n')).toContain('from the archive');
  expect(lines.join('\n')).toMatch(new RegExp(`${met.id}.*met \\(archive\\)`));
  lines.length = 0;
  expect(
    await runCli(['expect', 'list', '--request-id', 'ARCH-CANCEL-1', '--json'], { env, out: (l) => lines.push(l) }),
  ).toBe(0);
  // The CLI names the archive it reads first; the JSON follows.
  expect(JSON.parse(lines.slice(lines.findIndex((l) => l.startsWith('['))).join('\n'))).toEqual([
    expect.objectContaining({ id: cancelled.id, state: 'cancelled', source: 'archive' }),
  ]);
});

it('writes each change of an expectation once, and keeps the newest whatever order the entries come in', async () => {
  const url = await freshDatabase('expectation_changes');
  const pool = new Pool({ connectionString: url });
  try {
    await migrate(pool);
    const base = {
      id: 'exp_order1',
      eventType: 'payment.result',
      environment: 'production',
      requestId: 'ORDER-1',
      dueBy: String(Date.parse('2026-01-01T00:00:00Z')),
      createdAt: String(Date.parse('2025-12-31T00:00:00Z')),
    };
    const entry = (rev: number, state: string, extra: Record<string, string> = {}) => ({
      id: `${rev}-0`,
      fields: {
        d: 'expectation',
        r: JSON.stringify({ ...base, rev: String(rev), state, updatedAt: String(rev), ...extra }),
      },
    });
    const write = (...entries: ReturnType<typeof entry>[]) => writeBatch(pool, sortEntries(entries), new Set());
    expect((await write(entry(1, 'open'), entry(3, 'met', { metBy: 'evt_x' }))).expectations).toBe(2);
    // A change archived late (it waited in another archiver's pending entries) adds its change, not its state.
    expect((await write(entry(2, 'overdue'))).expectations).toBe(1);
    // An entry written again after a crash adds nothing.
    expect((await write(entry(3, 'met', { metBy: 'evt_x' }))).expectations).toBe(0);
    const [row] = (await pool.query('SELECT state, revision, facts FROM webhook_archive.expectations')).rows;
    expect(row).toMatchObject({ state: 'met', revision: 3, facts: { metBy: 'evt_x' } });
    const changes = await pool.query('SELECT state FROM webhook_archive.expectation_changes ORDER BY revision');
    expect(changes.rows.map((r: { state: string }) => r.state)).toEqual(['open', 'overdue', 'met']);
    // A record without the fields its row needs is not understood: dropped as unreadable, not written.
    const bad = sortEntries([{ id: '9-0', fields: { d: 'expectation', r: '{"id":"exp_x","state":"met"}' } }]);
    expect(bad.unreadable).toEqual(['9-0']);
  } finally {
    await pool.end();
  }
});
