import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import request from 'supertest';
import { stringify } from 'yaml';
import { eventIdFor } from '../src/model/ids';
import { scrapedValue } from './support/metric-value';
import { ADMIN_TEST_TOKEN, buildForwarding, waitUntil, type ForwardingHarness } from './support/forwarding-harness';
import { FakePlatform } from './support/platform';
import { TargetServer } from './support/target-server';
import { tempDir } from './support/temp-dir';

const ROOT = path.resolve(__dirname, '..');
const platform = new FakePlatform();
/** Retitles the terminal, then clears it; a C1 CSI (0x9b) and a NUL besides. */
const ESCAPES = '\u001b]0;owned\u0007\u001b[2J\u009b2J\u0000';
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
const body = '{"type":"MERCH","data":{"case":"escapes"}}';
const eventId = eventIdFor('payment.result', 'production', Buffer.from(body));
let f: ForwardingHarness;
let erp: TargetServer;
let env: Record<string, string>;
let redis: Redis;

beforeAll(async () => {
  // A permanent refusal whose text is terminal escapes: dead-lettered at once.
  erp = await TargetServer.start(() => ({ status: 400, body: `refused ${ESCAPES} here` }));
  const targets = [{ name: 'erp', url: erp.url }];
  f = buildForwarding(platform, targets);
  const file = path.join(tempDir('robust'), 'config.yaml');
  writeFileSync(file, stringify({ targets: [{ ...targets[0], events: ['*'] }] }));
  redis = new Redis(f.config.redisUrl);
  env = { CONFIG_FILE: file, REDIS_URL: f.config.redisUrl, QUEUE_PREFIX: f.config.queuePrefix };
  await platform.send(f.receiver.app, platform.signed('payment.result', { body })).expect(200);
  await waitUntil(async () => (await f.deadLetters.list()).length === 1, 10000, 'one dead letter');
});
afterAll(async () => {
  redis.disconnect();
  await f.close();
  await erp.close();
});

/** The real CLI in its own process: what reaches its stdout, byte for byte. */
function cliStdout(...argv: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['-r', 'ts-node/register', path.join(ROOT, 'src/cli/main.ts'), ...argv], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr }));
  });
}

const admin = () => ({
  get: (p: string) => request(f.admin).get(p).set('authorization', `Bearer ${ADMIN_TEST_TOKEN}`),
});

describe('terminal escapes in what a target answered', () => {
  it('are not stored in the response excerpt', async () => {
    const [letter] = await f.deadLetters.list();
    expect(letter!.lastFailure?.responseExcerpt ?? '').toContain('refused');
    expect(letter!.lastFailure?.responseExcerpt).not.toMatch(CONTROL);
    expect(letter!.reason).not.toMatch(CONTROL);
  });

  it("never reach the CLI's stdout, even when stored before they were stripped (dlq list, event <id>)", async () => {
    // As an older receiver stored them: raw in the job's failure reason and attempt log.
    const queue = f.pipeline.deliveryQueue('erp')!;
    const job = (await queue.getJob(eventId))!;
    await redis.hset(queue.toKey(eventId), 'failedReason', `HTTP 400: ${ESCAPES}`);
    await job.log(
      JSON.stringify({
        attempt: 9,
        at: new Date().toISOString(),
        target: 'erp',
        status: 400,
        errorClass: 'http_status',
        error: `HTTP 400: ${ESCAPES}`,
        responseExcerpt: ESCAPES,
      }),
    );

    const list = await cliStdout('dlq', 'list');
    expect(list.code).toBe(0);
    expect(list.stdout).toContain(`erp/${eventId}`);
    expect(list.stdout).toContain(']0;owned');
    expect(list.stdout).not.toMatch(CONTROL);

    const view = await cliStdout('event', eventId);
    expect(view.code).toBe(0);
    expect(view.stdout).toContain(eventId);
    expect(view.stdout).not.toMatch(CONTROL);
  }, 30000);
});

describe('ids that are not event ids', () => {
  const bullmqRecords = ['meta', 'events', 'id', 'stalled-check', 'failed', 'de'];

  it('answer 404 in the event view, resend and dead-letter discard, and not_found in a quarantine replay; `meta` shows no fake event', async () => {
    for (const id of bullmqRecords) {
      const view = await admin().get(`/admin/api/events/${id}`);
      expect([id, view.status, view.body.error]).toEqual([id, 404, 'not_found']);
      const resend = await request(f.admin)
        .post(`/admin/api/events/${id}/resend`)
        .set('authorization', `Bearer ${ADMIN_TEST_TOKEN}`)
        .send({});
      expect([id, resend.status]).toEqual([id, 404]);
      const discard = await request(f.admin)
        .delete(`/admin/api/dead-letters/erp/${id}`)
        .set('authorization', `Bearer ${ADMIN_TEST_TOKEN}`);
      expect([id, discard.status]).toEqual([id, 404]);
      const replay = await request(f.admin)
        .post('/admin/api/quarantine/replay')
        .set('authorization', `Bearer ${ADMIN_TEST_TOKEN}`)
        .send({ ids: [id] });
      expect([id, replay.status, replay.body.results]).toEqual([id, 200, [{ id, outcome: 'not_found' }]]);
    }
    const dlqReplay = await request(f.admin)
      .post('/admin/api/dead-letters/replay')
      .set('authorization', `Bearer ${ADMIN_TEST_TOKEN}`)
      .send({ ids: bullmqRecords.map((id) => `erp/${id}`) });
    expect(dlqReplay.status).toBe(200);
    expect(dlqReplay.body.notFound).toHaveLength(bullmqRecords.length);
  });
});

describe('a malformed job among the dead letters', () => {
  it('is reported as unreadable and skipped: the listing still answers, through the admin API and the CLI', async () => {
    const queue = f.pipeline.deliveryQueue('erp')!;
    await redis.hset(
      queue.toKey('broken-json'),
      'name',
      'payment.result',
      'data',
      '{not json',
      'opts',
      '{}',
      'timestamp',
      '1',
      'finishedOn',
      '2',
    );
    await redis.hset(
      queue.toKey('not-a-delivery'),
      'name',
      'payment.result',
      'data',
      'null',
      'opts',
      '{}',
      'timestamp',
      '1',
      'finishedOn',
      '2',
    );
    await redis.zadd(queue.toKey('failed'), 1, 'broken-json', 2, 'not-a-delivery');

    const res = await admin().get('/admin/api/dead-letters');
    expect(res.status).toBe(200);
    const byId = Object.fromEntries(
      (res.body.deadLetters as { id: string; unreadable?: boolean; reason: string }[]).map((d) => [d.id, d]),
    );
    expect(byId[`erp/${eventId}`]).toMatchObject({ eventId, eventType: 'payment.result' });
    expect(byId['erp/broken-json']).toMatchObject({
      unreadable: true,
      reason: expect.stringMatching(/^unreadable job: /),
    });
    expect(byId['erp/not-a-delivery']).toMatchObject({
      unreadable: true,
      reason: 'unreadable job: its data is not a delivery job',
    });

    const cli = await cliStdout('dlq', 'list');
    expect(cli.code).toBe(0);
    expect(cli.stdout).toContain(`erp/${eventId}`);
    expect(cli.stdout).toMatch(/erp\/broken-json .*unreadable job/);
  }, 30000);
});

describe('a malformed job in the quarantine', () => {
  // Job ids of the quarantine's shape (so a replay reads them), written straight into the queue as
  // no current receiver would: data that is not JSON, and data without the body and the errors.
  const NOT_JSON = '0000000000000001-notjson';
  const NO_BODY = '0000000000000002-nobody';
  let readableId: string;

  beforeAll(async () => {
    await platform.send(f.receiver.app, platform.signed('payment.result', { body: '<xml/>' })).expect(200);
    const queue = f.pipeline.quarantine;
    const partial = JSON.stringify({
      eventId: `evt_${'0'.repeat(40)}`,
      eventType: 'payment.result',
      receivedAt: new Date().toISOString(),
    });
    for (const [id, data] of [
      [NOT_JSON, '{not json'],
      [NO_BODY, partial],
    ] as const) {
      await redis.hset(
        queue.toKey(id),
        'name',
        'payment.result',
        'data',
        data,
        'opts',
        '{}',
        'timestamp',
        String(Date.now()),
      );
      await redis.lpush(queue.toKey('wait'), id);
    }
  });

  it('is listed as unreadable beside the readable ones, with a warn line naming it, through the admin API and the CLI', async () => {
    const res = await admin().get('/admin/api/quarantine');
    expect(res.status).toBe(200);
    const byId = Object.fromEntries(
      (res.body.quarantined as { id: string; unreadable?: string }[]).map((q) => [q.id, q]),
    );
    expect(Object.keys(byId)).toHaveLength(3);
    const readable = (res.body.quarantined as { id: string; eventType?: string }[]).find(
      (q) => q.eventType === 'payment.result',
    )!;
    readableId = readable.id;
    expect(readable).toMatchObject({ reason: 'invalid', errors: [expect.stringMatching(/not JSON/)] });
    expect(byId[NOT_JSON]).toEqual({
      id: NOT_JSON,
      unreadable: expect.stringMatching(/^its stored job is not JSON: /),
    });
    expect(byId[NO_BODY]).toEqual({ id: NO_BODY, unreadable: expect.stringContaining('rawBody') });
    for (const id of [NOT_JSON, NO_BODY]) {
      expect(f.adminLogs.find((l) => l.level === 'warn' && l.jobId === id)).toMatchObject({
        message: 'quarantined job unreadable',
        queue: 'quarantine',
        reason: byId[id]!.unreadable,
      });
    }

    const cli = await cliStdout('quarantine', 'list');
    expect(cli.code).toBe(0);
    expect(cli.stdout).toMatch(new RegExp(`^${readableId}\\s+payment\\.result\\s+production\\s`, 'm'));
    expect(cli.stdout).toMatch(new RegExp(`^${NOT_JSON}\\s.*unreadable: its stored job is not JSON: `, 'm'));
    expect(cli.stdout).toMatch(new RegExp(`^${NO_BODY}\\s.*unreadable: .*rawBody`, 'm'));
    expect(cli.stdout).toContain('3 quarantined, 2 of them unreadable');
    expect(cli.stderr).toMatch(new RegExp(`"jobId":"${NOT_JSON}"`));
  }, 30000);

  it('is refused by a replay (409 unreadable_job in the API, an error and exit 1 in the CLI), and nothing named with it is replayed', async () => {
    const res = await request(f.admin)
      .post('/admin/api/quarantine/replay')
      .set('authorization', `Bearer ${ADMIN_TEST_TOKEN}`)
      .send({ ids: [readableId, NOT_JSON] });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      error: 'unreadable_job',
      message: expect.stringContaining(NOT_JSON),
      unreadable: [{ id: NOT_JSON, reason: expect.stringMatching(/^its stored job is not JSON: /) }],
    });
    expect(f.adminLogs.find((l) => l.action === 'quarantine.replay' && l.refused !== undefined)).toMatchObject({
      items: [readableId, NOT_JSON],
      refused: expect.stringContaining(NOT_JSON),
    });
    const listed = await admin().get('/admin/api/quarantine');
    expect(listed.body.quarantined.map((q: { id: string }) => q.id)).toEqual(
      expect.arrayContaining([readableId, NOT_JSON, NO_BODY]),
    );

    // The readable one is still there to act on: replayed alone, it answers as its body deserves.
    const alone = await request(f.admin)
      .post('/admin/api/quarantine/replay')
      .set('authorization', `Bearer ${ADMIN_TEST_TOKEN}`)
      .send({ ids: [readableId] });
    expect([alone.status, alone.body.results]).toEqual([
      200,
      [{ id: readableId, outcome: 'still_invalid', errors: [expect.stringMatching(/not JSON/)] }],
    ]);

    const noBody = await request(f.admin)
      .post('/admin/api/quarantine/replay')
      .set('authorization', `Bearer ${ADMIN_TEST_TOKEN}`)
      .send({ ids: [NO_BODY] });
    expect([noBody.status, noBody.body.error]).toEqual([409, 'unreadable_job']);

    const cli = await cliStdout('quarantine', 'replay', NO_BODY);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toMatch(new RegExp(`^error: .*${NO_BODY}.*unreadable.*rawBody`, 'm'));
  }, 30000);
});

describe('an unreadable job waiting longest in a queue', () => {
  // Written straight into the quarantine (no worker takes its jobs) at the tail of its wait list, where
  // the oldest waiting job is, two minutes old by its timestamp; its data is not JSON.
  const OLDEST = '0000000000000000-oldest';
  const AGE_SECONDS = 120;

  beforeAll(async () => {
    const queue = f.pipeline.quarantine;
    await redis.hset(
      queue.toKey(OLDEST),
      'name',
      'payment.result',
      'data',
      '{not json',
      'opts',
      '{}',
      'timestamp',
      String(Date.now() - AGE_SECONDS * 1000),
    );
    await redis.rpush(queue.toKey('wait'), OLDEST);
  });

  it('costs no queue its summary: the admin API, the CLI and /metrics report every queue, its age read from its timestamp, and a warn line names it', async () => {
    const waiting = await f.pipeline.quarantine.getWaitingCount();
    const queueNames = f.pipeline.allQueues().map((q) => q.name);

    const res = await admin().get('/admin/api/queues');
    expect(res.status).toBe(200);
    expect((res.body.queues as { queue: string }[]).map((q) => q.queue)).toEqual(queueNames);
    const quarantine = (
      res.body.queues as { queue: string; counts: { waiting: number }; oldestWaitingSeconds: number }[]
    ).find((q) => q.queue === 'quarantine')!;
    expect(quarantine.counts.waiting).toBe(waiting);
    expect(quarantine.oldestWaitingSeconds).toBeGreaterThanOrEqual(AGE_SECONDS);
    expect(quarantine.oldestWaitingSeconds).toBeLessThan(AGE_SECONDS + 60);
    expect(f.adminLogs.find((l) => l.level === 'warn' && l.jobId === OLDEST)).toMatchObject({
      queue: 'quarantine',
      reason: expect.stringMatching(/not JSON/),
    });

    const scrape = await admin().get('/metrics');
    expect(scrape.status).toBe(200);
    expect(
      scrapedValue(scrape.text, 'webhook_queue_oldest_waiting_seconds', { queue: 'quarantine' }),
    ).toBeGreaterThanOrEqual(AGE_SECONDS);
    expect(scrapedValue(scrape.text, 'webhook_queue_jobs', { queue: 'quarantine', state: 'waiting' })).toBe(waiting);
    for (const name of queueNames)
      expect([name, scrapedValue(scrape.text, 'webhook_queue_jobs', { queue: name, state: 'waiting' })]).toEqual([
        name,
        expect.any(Number),
      ]);

    const cli = await cliStdout('queues');
    expect(cli.code).toBe(0);
    expect(cli.stdout).toMatch(new RegExp(`^quarantine\\s+${waiting}\\s.*\\s1[2-7]\\d s`, 'm'));
    for (const name of queueNames) expect(cli.stdout).toMatch(new RegExp(`^${name}\\s`, 'm'));
    expect(cli.stderr).toMatch(new RegExp(`"jobId":"${OLDEST}"`));
  }, 30000);
});
