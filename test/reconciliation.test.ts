import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { Registry } from 'prom-client';
import request from 'supertest';
import { parse } from 'yaml';
import { wireAdmin } from '../src/admin/wiring';
import { runCli } from '../src/cli/run';
import { loadApiEnvironments } from '../src/config/api-environments';
import { createLogger } from '../src/logging/logger';
import { startReconciler, type Reconciler } from '../src/reconciliation/reconciler';
import { createExpectationStore } from '../src/reconciliation/store';
import { generateTestKeyPair } from '../src/signing/keypair';
import { ADMIN_TEST_TOKEN, buildForwarding, waitUntil, type ForwardingHarness } from './support/forwarding-harness';
import { LogCapture } from './support/harness';
import { scrapedValue } from './support/metric-value';
import { FakePlatform } from './support/platform';
import { environmentsAsking, StandInPlatform, type AnswerMode } from './support/stand-in-platform';
import { TargetServer } from './support/target-server';
import { tempDir } from './support/temp-dir';

jest.setTimeout(30000);

const ROOT = path.resolve(__dirname, '..');
const PROMTOOL = process.env.PROMTOOL_PATH ?? '/usr/bin/promtool';
const platform = new FakePlatform();
const merchant = generateTestKeyPair();
const bearer = { authorization: `Bearer ${ADMIN_TEST_TOKEN}` };
const VIEWER_TOKEN = 'viewer-token-0123456789';
const dir = tempDir('reconciliation');
const configFile = path.join(dir, 'config.json');
/** How the stand-in answers about each request_id (final unless named here). */
const modes = new Map<string, AnswerMode>();
let standIn: StandInPlatform;
let ledger: TargetServer;
let f: ForwardingHarness;
let reconciler: Reconciler;
const logs = new LogCapture();

beforeAll(async () => {
  standIn = await StandInPlatform.start(platform.keys, merchant.publicKeyPem);
  standIn.mode = (inquiry) => modes.get(String(inquiry.json.request_id)) ?? 'final';
  ledger = await TargetServer.start();
  writeFileSync(
    configFile,
    JSON.stringify({
      environments: environmentsAsking(standIn, { deliverFromInquiry: true, timeoutMs: 5000 }),
      adminPrincipals: [{ name: 'auditor', role: 'viewer', token: VIEWER_TOKEN }],
      // The loop is driven by the tests (tick); a refused answer is asked again 50 ms later.
      expectations: { pollIntervalMs: 600000, retryInitialMs: 50, retryMaxMs: 100, horizonSeconds: 3600 },
    }),
  );
  f = buildForwarding(platform, [{ name: 'ledger', url: ledger.url, events: ['payment.result'] }], {
    PLATFORM_PUBLIC_KEYS: '',
    CONFIG_FILE: configFile,
  });
  await f.receiver.ready();
  reconciler = startReconciler({
    store: createExpectationStore(f.pipeline.redis, f.pipeline.prefix),
    settings: f.config.expectations,
    environments: loadApiEnvironments(f.config, { TEST_MERCHANT_KEY: merchant.privateKeyPem }),
    environmentNames: ['production'],
    producer: f.pipeline,
    metrics: f.metrics,
    logger: createLogger('info', logs.stream),
    toleranceMs: f.config.timestampToleranceMs,
    headerPrefix: f.config.signatureHeaderPrefix,
  });
});
afterAll(async () => {
  await reconciler.close();
  await f.close();
  await ledger.close();
  await standIn.close();
});

async function expectNotification(body: Record<string, unknown>, status = 201) {
  const res = await request(f.admin).post('/admin/api/expectations').set(bearer).send(body);
  expect(res.status).toBe(status);
  return res.body.expectation as { id: string; state: string; requestId: string; metBy?: string };
}

async function expectationOf(id: string) {
  const res = await request(f.admin).get(`/admin/api/expectations/${id}`).set(bearer).expect(200);
  return res.body.expectation as {
    state: string;
    attempts: number;
    lastOutcome?: string;
    metBy?: string;
    inquiryEventId?: string;
    lateEventId?: string;
  };
}

const inquiriesAbout = (requestId: string) => standIn.inquiries.filter((i) => i.json.request_id === requestId);
const metric = async (name: string, labels: Record<string, string>) =>
  scrapedValue(await f.metrics.registry.metrics(), name, labels) ?? 0;

describe('an expectation met by its notification', () => {
  it('is met by a verified notification carrying its request_id, and nothing asks the platform', async () => {
    const e = await expectNotification({ eventType: 'payment.result', requestId: 'PAY-MET-1', dueInSeconds: 0 });
    const n = platform.signed('payment.result', {
      body: '{"type":"MERCH","data":{"request_id":"PAY-MET-1","status":"SUCCESS"}}',
    });
    await platform.send(f.receiver.app, n).expect(200);
    await waitUntil(async () => (await expectationOf(e.id)).state === 'met', 5000, 'met');
    await reconciler.tick();

    const after = await expectationOf(e.id);
    expect(after).toMatchObject({ state: 'met', attempts: 0 });
    expect(after.metBy).toMatch(/^evt_/);
    expect(inquiriesAbout('PAY-MET-1')).toHaveLength(0);
  });
});

describe('an expectation added after its notification arrived', () => {
  it('is met at once by that notification (found through the request-id index), and nothing asks the platform', async () => {
    const n = platform.signed('payment.result', {
      body: '{"type":"MERCH","data":{"request_id":"PAY-EARLY-1","status":"SUCCESS"}}',
    });
    await platform.send(f.receiver.app, n).expect(200);
    const [eventId] = await f.pipeline.eventIdsForRequest('PAY-EARLY-1');
    const e = await expectNotification({ eventType: 'payment.result', requestId: 'PAY-EARLY-1', dueInSeconds: 0 });
    expect(e).toMatchObject({ state: 'met', metBy: eventId });
    await reconciler.tick();
    expect(inquiriesAbout('PAY-EARLY-1')).toHaveLength(0);
  });

  it('is not met by an earlier notification of another type or environment carrying the same request_id', async () => {
    const n = platform.signed('payment.result', {
      body: '{"type":"MERCH","data":{"request_id":"PAY-EARLY-2","status":"SUCCESS"}}',
    });
    await platform.send(f.receiver.app, n).expect(200);
    const e = await expectNotification({ eventType: 'fx.result', requestId: 'PAY-EARLY-2', dueInSeconds: 3600 });
    expect(e.state).toBe('open');
  });
});

describe('an overdue expectation', () => {
  let id: string;
  it('triggers exactly one inquiry, signed with the merchant key, which the platform verifies', async () => {
    id = (await expectNotification({ eventType: 'payment.result', requestId: 'PAY-LOST-1', dueInSeconds: 0 })).id;
    await reconciler.tick();
    await reconciler.tick();

    const asked = inquiriesAbout('PAY-LOST-1');
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({
      path: '/api/v2/merch/pay/inquiry',
      signatureVerified: true,
      json: { request_id: 'PAY-LOST-1', attempt: 1 },
    });
    expect(asked[0]!.headers).toMatchObject({ 'x-svc-appid': 'merchant-app-1', 'x-merch-id': 'M100023' });
  });

  it('becomes missing_notification on a final answer: counted, logged with its request_id', async () => {
    const after = await expectationOf(id);
    expect(after.state).toBe('missing_notification');
    expect(
      await metric('webhook_expectations_total', { outcome: 'missing_notification', event_type: 'payment.result' }),
    ).toBe(1);
    expect(await metric('webhook_inquiries_total', { outcome: 'final' })).toBeGreaterThanOrEqual(1);
    expect(
      logs.find(
        (l) => l.message?.toString().startsWith('notification missing') === true && l.requestId === 'PAY-LOST-1',
      ),
    ).toMatchObject({ level: 'error', expectationId: id });
  });

  it('with deliverFromInquiry, the target receives the event built from the answer, marked as such', async () => {
    await ledger.waitFor(() => ledger.successes().some((r) => r.headers['x-webhook-source'] === 'inquiry'));
    const delivered = ledger.successes().find((r) => r.headers['x-webhook-source'] === 'inquiry')!;
    const envelope = JSON.parse(delivered.body.toString('utf8')) as Record<string, any>;
    expect(envelope).toMatchObject({
      type: 'payment.result',
      environment: 'production',
      source: 'inquiry',
      data: { ret_code: '000000', data: { request_id: 'PAY-LOST-1', status: 'SUCCESS' } },
    });
    expect((await expectationOf(id)).inquiryEventId).toBe(envelope.id);
  });

  it('and the missing-notification alert rule fires on that series (promtool test rules)', async () => {
    const labels = { event_type: 'payment.result', environment: 'production', outcome: 'missing_notification' };
    const value = await metric('webhook_expectations_total', labels);
    expect(value).toBe(1);
    expect(
      promtoolTest('webhook_expectations_total', labels, value, 'WebhookNotificationMissing', {
        environment: 'production',
        event_type: 'payment.result',
      }),
    ).toEqual({ status: 0, output: expect.stringContaining('SUCCESS') });
  });

  it('is listed by request_id in the API and beside the events in the console', async () => {
    const api = await request(f.admin).get('/admin/api/expectations?requestId=PAY-LOST-1').set(bearer).expect(200);
    expect(api.body.expectations).toEqual([expect.objectContaining({ id, state: 'missing_notification' })]);
    const page = await request(f.admin).get('/admin/console/events?q=PAY-LOST-1').set(bearer).expect(200);
    expect(page.text).toContain(`id="${id}"`);
    expect(page.text).toContain('missing notification');
  });
});

describe('a notification that comes after its expectation settled without it', () => {
  it('is delivered as its own event, and recorded on the expectation as late', async () => {
    const e = (await request(f.admin).get('/admin/api/expectations?requestId=PAY-LOST-1').set(bearer)).body
      .expectations[0] as { id: string };
    const n = platform.signed('payment.result', {
      body: '{"type":"MERCH","data":{"request_id":"PAY-LOST-1","status":"SUCCESS"}}',
    });
    await platform.send(f.receiver.app, n).expect(200);
    await waitUntil(async () => (await expectationOf(e.id)).lateEventId !== undefined, 5000, 'late');
    const after = await expectationOf(e.id);
    expect(after.state).toBe('missing_notification');
    await ledger.waitFor(() => ledger.successes().some((r) => r.headers['webhook-id'] === after.lateEventId));
    const delivered = ledger.successes().find((r) => r.headers['webhook-id'] === after.lateEventId)!;
    expect(delivered.headers['x-webhook-source']).toBeUndefined();
    const labels = { event_type: 'payment.result', outcome: 'late_notification' };
    expect(await metric('webhook_expectations_total', labels)).toBe(1);
  });
});

describe('answers that are not believed', () => {
  it.each([
    ['a bad signature', 'bad_signature', 'bad_signature'],
    ['no signature headers', 'unsigned', 'unsigned'],
    ['an old timestamp', 'stale', 'stale'],
    ['a replayed nonce', 'replayed', 'replayed'],
  ] as const)(
    'an answer with %s is refused, counted, logged, and the expectation stays overdue',
    async (_what, mode, reason) => {
      const requestId = `PAY-${mode}`;
      if (mode === 'replayed') {
        // An answer the service believed first (not final), whose nonce the next answer reuses.
        modes.set('PAY-FIRST', 'pending');
        const first = await expectNotification({
          eventType: 'payment.result',
          requestId: 'PAY-FIRST',
          dueInSeconds: 0,
        });
        await reconciler.tick();
        expect(await expectationOf(first.id)).toMatchObject({
          state: 'overdue',
          lastOutcome: 'the platform reports no final state yet',
        });
        await request(f.admin).post(`/admin/api/expectations/${first.id}/cancel`).set(bearer).expect(200);
      }
      modes.set(requestId, mode);
      const before = await metric('webhook_inquiry_answers_refused_total', { reason });
      const e = await expectNotification({ eventType: 'payment.result', requestId, dueInSeconds: 0 });
      await reconciler.tick();

      expect(inquiriesAbout(requestId)).toHaveLength(1);
      expect(await expectationOf(e.id)).toMatchObject({ state: 'overdue', lastOutcome: `answer refused: ${reason}` });
      expect(await metric('webhook_inquiry_answers_refused_total', { reason })).toBe(before + 1);
      expect(logs.find((l) => l.message === 'inquiry answer not believed' && l.requestId === requestId)).toMatchObject({
        reason,
      });
      // Asked again after the backoff, and still not believed.
      await new Promise((r) => setTimeout(r, 120));
      await reconciler.tick();
      expect(inquiriesAbout(requestId).length).toBeGreaterThanOrEqual(2);
      expect((await expectationOf(e.id)).state).toBe('overdue');
      await request(f.admin).post(`/admin/api/expectations/${e.id}/cancel`).set(bearer).expect(200);
    },
  );
});

describe('an incoming remittance (no inquiry endpoint)', () => {
  it('goes overdue and alerts without any request to the platform', async () => {
    const asked = standIn.inquiries.length;
    const e = await expectNotification({ eventType: 'remittance.incoming', requestId: 'REM-1', dueInSeconds: 0 });
    await reconciler.tick();

    expect(standIn.inquiries).toHaveLength(asked);
    const after = await expectationOf(e.id);
    expect(after).toMatchObject({ state: 'overdue', lastOutcome: 'remittance.incoming has no inquiry endpoint' });
    const labels = { event_type: 'remittance.incoming', environment: 'production', outcome: 'overdue_without_inquiry' };
    expect(await metric('webhook_expectations_total', labels)).toBe(1);
    expect(logs.find((l) => l.message === 'expected notification overdue' && l.requestId === 'REM-1')).toMatchObject({
      level: 'warn',
    });
    expect(
      promtoolTest('webhook_expectations_total', labels, 1, 'WebhookExpectedNotificationOverdue', {
        environment: 'production',
        event_type: 'remittance.incoming',
      }),
    ).toEqual({ status: 0, output: expect.stringContaining('SUCCESS') });
  });
});

describe('the bound, the same expectation twice, and cancelling', () => {
  it('answers 200 with the open one for the same request, and 429 past maxOpenExpectations', async () => {
    const first = await expectNotification({ eventType: 'payment.result', requestId: 'PAY-BOUND', dueInSeconds: 600 });
    const again = await expectNotification(
      { eventType: 'payment.result', requestId: 'PAY-BOUND', dueInSeconds: 900 },
      200,
    );
    expect(again.id).toBe(first.id);
    const open = await f.pipeline.redis.zcard(`${f.pipeline.prefix}:x:open`);
    const full = wireAdmin(
      { ...f.config, expectations: { ...f.config.expectations, maxOpenExpectations: open } },
      f.pipeline,
      new Registry(),
      createLogger('info', new PassThrough()),
    );
    const refused = await request(full)
      .post('/admin/api/expectations')
      .set(bearer)
      .send({ eventType: 'payment.result', requestId: 'PAY-ONE-TOO-MANY', dueInSeconds: 600 });
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ error: 'too_many_expectations' });
  });

  it('refuses a viewer 403: adding one needs an operator', async () => {
    const res = await request(f.admin)
      .post('/admin/api/expectations')
      .set({ authorization: `Bearer ${VIEWER_TOKEN}` })
      .send({ eventType: 'payment.result', requestId: 'PAY-VIEWER', dueInSeconds: 600 });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: 'read_only_principal' });
    const listed = await request(f.admin).get('/admin/api/expectations?requestId=PAY-VIEWER').set(bearer).expect(200);
    expect(listed.body.expectations).toEqual([]);
  });

  it('refuses a body without a due time 400', async () => {
    const bad = await request(f.admin)
      .post('/admin/api/expectations')
      .set(bearer)
      .send({ eventType: 'payment.result', requestId: 'X' });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain('dueBy or dueInSeconds');
  });

  it('cancels an open one (audited), and refuses to cancel it twice (409)', async () => {
    const e = await expectNotification({ eventType: 'payment.result', requestId: 'PAY-CANCEL', dueInSeconds: 600 });
    const res = await request(f.admin).post(`/admin/api/expectations/${e.id}/cancel`).set(bearer).expect(200);
    expect(res.body.expectation).toMatchObject({ state: 'cancelled', cancelledBy: 'token' });
    await request(f.admin).post(`/admin/api/expectations/${e.id}/cancel`).set(bearer).expect(409);
    expect(
      f.adminLogs.find((l) => l.action === 'expectation.cancel' && (l.items as string[])[0] === e.id),
    ).toBeDefined();
  });
});

describe('npm run cli -- expect', () => {
  const cli = async (args: string[]) => {
    const out: string[] = [];
    const code = await runCli(args, {
      env: { CONFIG_FILE: configFile, REDIS_URL: f.config.redisUrl, QUEUE_PREFIX: f.config.queuePrefix },
      out: (l) => out.push(l),
      log: new PassThrough(),
    });
    return { code, out: out.join('\n') };
  };

  it('expects a notification, and lists it by request_id', async () => {
    const added = await cli(['expect', 'payment.result', 'PAY-CLI-1', '--due-in', '600']);
    expect(added.code).toBe(0);
    expect(added.out).toMatch(/exp_\w+ .* PAY-CLI-1 +payment\.result +production +open/);
    const listed = await cli(['expect', 'list', '--request-id', 'PAY-CLI-1', '--json']);
    expect(JSON.parse(listed.out)).toEqual([
      expect.objectContaining({ requestId: 'PAY-CLI-1', state: 'open', createdBy: expect.stringMatching(/^cli:/) }),
    ]);
  });
});

/** Runs `promtool test rules` over config/alerts.yml with the series given (0 for 3 minutes, then the value). */
function promtoolTest(
  name: string,
  labels: Record<string, string>,
  value: number,
  alert: string,
  expectedLabels: Record<string, string>,
): { status: number | null; output: string } {
  const series = `${name}{${Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(',')}}`;
  const test = {
    rule_files: [path.join(ROOT, 'config/alerts.yml')],
    evaluation_interval: '1m',
    tests: [
      {
        interval: '1m',
        input_series: [{ series, values: `0x3 ${value}x20` }],
        alert_rule_test: [
          { eval_time: '2m', alertname: alert, exp_alerts: [] },
          {
            eval_time: '10m',
            alertname: alert,
            exp_alerts: [
              {
                exp_labels: { ...expectedLabels, severity: 'page' },
                exp_annotations: annotationsOf(alert, expectedLabels),
              },
            ],
          },
        ],
      },
    ],
  };
  const file = path.join(dir, `${alert}.test.json`);
  writeFileSync(file, JSON.stringify(test));
  const run = spawnSync(PROMTOOL, ['test', 'rules', file], { encoding: 'utf8' });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

/** The rule's annotations as Prometheus renders them for these labels (only `{{ $labels.x }}` is used in ours). */
function annotationsOf(alert: string, labels: Record<string, string>): Record<string, string> {
  const rules = parse(readFileSync(path.join(ROOT, 'config/alerts.yml'), 'utf8')) as {
    groups: { rules: { alert: string; annotations: Record<string, string> }[] }[];
  };
  const rule = rules.groups.flatMap((g) => g.rules).find((r) => r.alert === alert)!;
  return Object.fromEntries(
    Object.entries(rule.annotations).map(([k, v]) => [
      k,
      v.replace(/\{\{ \$labels\.(\w+) \}\}/g, (_m, l: string) => labels[l] ?? ''),
    ]),
  );
}
