import request from 'supertest';
import type { Express } from 'express';
import { describeDashboardRoute } from '../src/admin/dashboard-writes';
import { EVENT_TYPES } from '../src/model/event-table';
import { sampleBody } from '../src/signing/samples';
import { wireAdmin } from '../src/admin/wiring';
import { loadConfig } from '../src/config/load';
import { createLogger } from '../src/logging/logger';
import { createMetrics } from '../src/monitoring/metrics';
import { ADMIN_TEST_TOKEN, buildForwarding, waitUntil, type ForwardingHarness } from './support/forwarding-harness';
import { LogCapture } from './support/harness';
import { FakePlatform } from './support/platform';
import { TargetServer } from './support/target-server';

const platform = new FakePlatform();
const bearer = { authorization: `Bearer ${ADMIN_TEST_TOKEN}` };
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const board = '/admin/queues/api/queues';
let f: ForwardingHarness;
let erp: TargetServer;

/** What an attacker holding the admin credential would add: a delivery the worker signs as genuine. */
const forged = (eventId: string) => ({
  name: 'payment.result',
  data: {
    eventId,
    eventType: 'payment.result',
    receivedAt: new Date().toISOString(),
    path: '/api/v2/merch/pay/notify',
    rawBody:
      '{"type":"MERCH","data":{"request_id":"FORGED","status":"SUCCESS","amount":"999999.00","account_no":"6222020000000001"}}',
    rawBodyEncoding: 'utf8',
    signatureHeaders: {},
    target: 'erp',
  },
  options: { jobId: eventId },
});

beforeAll(async () => {
  erp = await TargetServer.start();
  // erp takes every type but fx.result, so an fx.result event stays in its event queue (unrouted).
  const events = EVENT_TYPES.filter((t) => t !== 'fx.result');
  f = buildForwarding(platform, [{ name: 'erp', url: erp.url, secret: SECRET, events }]);
});
afterAll(async () => {
  await f.close();
  await erp.close();
});

describe('the dashboard is read-only by default', () => {
  it('is the default, and ADMIN_READ_ONLY_DASHBOARD=false turns writes on', () => {
    expect(loadConfig({ ROLE: 'worker' }).adminReadOnlyDashboard).toBe(true);
    expect(loadConfig({ ROLE: 'worker', ADMIN_READ_ONLY_DASHBOARD: 'false' }).adminReadOnlyDashboard).toBe(false);
  });

  it('refuses a forged add to a delivery queue: 403, nothing queued, nothing delivered, a log line', async () => {
    const res = await request(f.admin).post(`${board}/deliver.erp/add`).set(bearer).send(forged('evt_forged_ro'));
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: 'read_only', message: expect.stringMatching(/admin API or the CLI/) });

    expect(await f.pipeline.deliveryQueue('erp')!.getJob('evt_forged_ro')).toBeUndefined();
    await new Promise((r) => setTimeout(r, 300));
    expect(erp.requests.filter((r) => r.headers['webhook-id'] === 'evt_forged_ro')).toHaveLength(0);
    expect(f.adminLogs.find((l) => l.message === 'dashboard write refused: the dashboard is read-only')).toMatchObject({
      level: 'warn',
      route: 'POST /api/queues/deliver.erp/add',
      queue: 'deliver.erp',
      principal: 'token',
    });
  });

  it.each([
    ['put', '/quarantine/retry/failed'],
    ['put', '/quarantine/clean/waiting'],
    ['put', '/quarantine/promote'],
    ['put', '/quarantine/empty'],
    ['put', '/quarantine/pause'],
    ['put', '/pause'],
    ['put', '/quarantine/obliterate'],
  ])('refuses %s %s and leaves the queue as it was', async (method, path) => {
    await platform.send(f.receiver.app, platform.signed('fx.result', { body: `not json ${path}` })).expect(200);
    const before = await request(f.admin).get('/admin/api/queues').set(bearer).expect(200);
    const count = (body: { queues: { queue: string; counts: Record<string, number>; paused: boolean }[] }) => {
      const q = body.queues.find((s) => s.queue === 'quarantine')!;
      return { counts: q.counts, paused: q.paused };
    };

    const res = await (request(f.admin) as unknown as Record<string, (p: string) => request.Test>)[method]!(
      `${board}${path}`,
    )
      .set(bearer)
      .send({});
    expect(res.status).toBe(403);

    const after = await request(f.admin).get('/admin/api/queues').set(bearer).expect(200);
    expect(count(after.body)).toEqual(count(before.body));
    expect(count(after.body).paused).toBe(false);
  });
});

describe('with dashboard writes turned on', () => {
  let writable: Express;
  const logs = new LogCapture();

  beforeAll(() => {
    writable = wireAdmin(
      { ...f.config, adminReadOnlyDashboard: false },
      f.pipeline,
      createMetrics().registry,
      createLogger('info', logs.stream),
    );
  });

  it('says so at start', async () => {
    await waitUntil(() => logs.lines.length > 0, 2000, 'a log line');
    expect(logs.find((l) => l.level === 'warn' && /dashboard writes are ON/.test(String(l.message)))).toBeDefined();
  });

  it('accepts an add, and audits it with the principal, route, queue, job id and masked content', async () => {
    const res = await request(writable).post(`${board}/deliver.erp/add`).set(bearer).send(forged('evt_forged_rw'));
    expect(res.status).toBe(200);
    // What read-only mode prevents: the worker signs the forged job with the target's secret.
    await erp.waitFor(() => erp.requests.some((r) => r.headers['webhook-id'] === 'evt_forged_rw'));
    expect(erp.requests.find((r) => r.headers['webhook-id'] === 'evt_forged_rw')!.headers['webhook-signature']).toMatch(
      /^v1,/,
    );

    const line = logs.find((l) => l.audit === true && l.action === 'dashboard.write');
    expect(line).toMatchObject({
      principal: 'token',
      from: expect.any(String),
      route: 'POST /api/queues/deliver.erp/add',
      queue: 'deliver.erp',
      jobId: 'evt_forged_rw',
      status: 200,
      jobName: 'payment.result',
    });
    expect(JSON.stringify(line)).not.toContain('6222020000000001');
    expect(String((line!.data as { rawBody: string }).rawBody)).toContain('"account_no":"***"');
  });

  it('audits a job-level write with the job id from its route', async () => {
    await platform.send(f.receiver.app, platform.signed('fx.result', { body: 'not json, to be removed' })).expect(200);
    const listed = await request(f.admin).get('/admin/api/quarantine').set(bearer).expect(200);
    const id = (listed.body.quarantined as { id: string }[])[0]!.id;
    await request(writable)
      .put(`${board}/quarantine/${encodeURIComponent(id)}/clean`)
      .set(bearer)
      .expect(204);
    await waitUntil(
      () => logs.find((l) => l.action === 'dashboard.write' && l.queue === 'quarantine') !== undefined,
      2000,
      'the audit line',
    );
    expect(logs.find((l) => l.action === 'dashboard.write' && l.queue === 'quarantine')).toMatchObject({
      principal: 'token',
      jobId: id,
      status: 204,
      answered: true,
    });
  });
});

describe('the dashboard masks job data as the admin API does', () => {
  const body =
    '{"type":"MERCH","data":{"request_id":"MASK-1","account_no":"6222029999999999","payer_name":"Ada Lovelace","amount":"10.00"}}';

  async function jobsOf(
    queue: string,
  ): Promise<{ text: string; jobs: { id: string; data: Record<string, unknown>; returnValue: unknown }[] }> {
    const res = await request(f.admin)
      .get(board)
      .query({ activeQueue: queue, status: 'latest', page: '1', jobsPerPage: '50' })
      .set(bearer)
      .expect(200);
    const found = (
      res.body.queues as { name: string; jobs: { id: string; data: Record<string, unknown>; returnValue: unknown }[] }[]
    ).find((q) => q.name === queue)!;
    return { text: res.text, jobs: found.jobs };
  }

  it('masks payload and rawBody in the event queue and the delivery queue, in lists and single jobs', async () => {
    await platform.send(f.receiver.app, platform.signed('payment.result', { body })).expect(200);
    await erp.waitFor(() => erp.successes().some((r) => r.body.includes('MASK-1')));
    // An event no target takes is kept in its event queue, with its parsed payload beside the body.
    const fx = JSON.parse(sampleBody('fx.result')) as { data: Record<string, unknown> };
    Object.assign(fx.data, {
      request_id: 'MASK-1',
      account_no: '6222029999999999',
      payer_name: 'Ada Lovelace',
      amount: '10.00',
    });
    await platform.send(f.receiver.app, platform.signed('fx.result', { body: JSON.stringify(fx) })).expect(200);

    const events = await jobsOf('fx.result');
    const event = events.jobs.find((j) => String(j.data.rawBody).includes('MASK-1'))!;
    expect(event.data.payload).toMatchObject({
      data: { request_id: 'MASK-1', account_no: '***', payer_name: '***', amount: '10.00' },
    });
    expect(JSON.parse(String(event.data.rawBody))).toMatchObject({ data: { account_no: '***', payer_name: '***' } });
    expect(events.text).not.toContain('6222029999999999');
    expect(events.text).not.toContain('Ada Lovelace');

    const deliveries = await jobsOf('deliver.erp');
    const delivery = deliveries.jobs.find((j) => String(j.data.rawBody).includes('MASK-1'))!;
    expect(JSON.parse(String(delivery.data.rawBody))).toMatchObject({
      data: { request_id: 'MASK-1', account_no: '***' },
    });
    expect(deliveries.text).not.toContain('6222029999999999');

    const single = await request(f.admin)
      .get(`${board}/deliver.erp/${encodeURIComponent(delivery.id)}`)
      .set(bearer)
      .expect(200);
    expect(single.body.job.data.rawBody).toContain('"account_no":"***"');
    expect(single.text).not.toContain('Ada Lovelace');
  });

  it('shows only the size of a body that is not JSON', async () => {
    await platform
      .send(f.receiver.app, platform.signed('settlement.result', { body: 'iban=DE89370400440532013000' }))
      .expect(200);
    const { text, jobs } = await jobsOf('quarantine');
    const job = jobs.find((j) => j.data.eventType === 'settlement.result')!;
    expect(job.data.rawBody).toBe('(27 bytes, not JSON: hidden; the quarantine API lists its errors)');
    expect(text).not.toContain('DE89370400440532013000');
  });
});

describe('describeDashboardRoute', () => {
  it.each([
    ['PUT', '/api/queues/deliver.erp/evt_1/retry', { queue: 'deliver.erp', jobId: 'evt_1' }],
    ['PUT', '/api/queues/deliver.erp/retry/failed', { queue: 'deliver.erp', jobId: undefined }],
    ['PUT', '/api/queues/deliver.erp/clean/completed', { queue: 'deliver.erp', jobId: undefined }],
    ['PATCH', '/api/queues/payment.result/abc-1/update-data', { queue: 'payment.result', jobId: 'abc-1' }],
    ['PUT', '/api/queues/pause', { queue: undefined, jobId: undefined }],
  ])('%s %s names the queue and job acted on', (method, path, expected) => {
    expect(describeDashboardRoute(method, path)).toEqual({ route: `${method} ${path}`, ...expected });
  });
});
