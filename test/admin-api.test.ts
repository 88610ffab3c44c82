import request from 'supertest';
import { ADMIN_TEST_TOKEN, buildForwarding, waitUntil, type ForwardingHarness } from './support/forwarding-harness';
import { FakePlatform } from './support/platform';
import { TargetServer } from './support/target-server';

const platform = new FakePlatform();
const bearer = { authorization: `Bearer ${ADMIN_TEST_TOKEN}` };
let f: ForwardingHarness;
let erp: TargetServer;
let crm: TargetServer;

beforeAll(async () => {
  erp = await TargetServer.start();
  crm = await TargetServer.start((n) => ({ status: n === 0 ? 503 : 200 }));
  f = buildForwarding(
    platform,
    [
      { name: 'erp', url: erp.url },
      { name: 'crm', url: crm.url, events: ['payment.result'] },
    ],
    { ADMIN_ALLOW_CORRECTIONS: 'true' },
  );
});
afterAll(async () => {
  await f.close();
  await erp.close();
  await crm.close();
});

const PROTECTED: [string, string][] = [
  ['get', '/metrics'],
  ['get', '/admin/queues'],
  ['get', '/admin/api/queues'],
  ['get', '/admin/api/events/evt_x'],
  ['get', '/admin/api/events?requestId=R1'],
  ['get', '/admin/api/dead-letters'],
  ['post', '/admin/api/dead-letters/replay'],
  ['get', '/admin/api/quarantine'],
  ['post', '/admin/api/quarantine/replay'],
  ['get', '/admin/api/targets'],
  ['post', '/admin/api/targets/erp/pause'],
  ['post', '/admin/api/targets/erp/resume'],
];

describe('admin authentication', () => {
  it.each(PROTECTED)('%s %s answers 401 without credentials', async (method, path) => {
    const res = await (request(f.admin) as unknown as Record<string, (p: string) => request.Test>)[method]!(path);
    expect(res.status).toBe(401);
  });

  it('accepts basic auth for a browser and asks for it', async () => {
    const { buildHarness } = await import('./support/harness');
    const h = buildHarness({
      PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
      ADMIN_USER: 'ops',
      ADMIN_PASSWORD: 'correct horse battery',
    });
    const { wireAdmin } = await import('../src/admin/wiring');
    const { createLogger } = await import('../src/logging/logger');
    const { LogCapture } = await import('./support/harness');
    const logs = new LogCapture();
    const admin = wireAdmin(h.config, h.pipeline, h.metrics.registry, createLogger('info', logs.stream));
    const denied = await request(admin).get('/admin/api/queues');
    expect(denied.status).toBe(401);
    expect(denied.headers['www-authenticate']).toMatch(/^Basic/);
    await request(admin).get('/admin/api/queues').auth('ops', 'correct horse battery').expect(200);
    await request(admin).get('/admin/api/queues').auth('ops', 'wrong').expect(401);
    await request(admin)
      .post('/admin/api/dead-letters/replay')
      .auth('ops', 'correct horse battery')
      .send({ all: true })
      .expect(200);
    expect(logs.find((l) => l.action === 'dead-letters.replay')).toMatchObject({
      audit: true,
      principal: 'basic:ops',
      replayed: 0,
      filter: { all: true },
    });
    await h.close();
  });

  it('refuses a state-changing request sent by a browser from another site', async () => {
    const res = await request(f.admin)
      .post('/admin/api/targets/erp/pause')
      .set(bearer)
      .set('origin', 'https://evil.example')
      .set('sec-fetch-site', 'cross-site');
    expect(res.status).toBe(403);
    expect((await request(f.admin).get('/admin/api/targets').set(bearer)).body.targets).toContainEqual({
      target: 'erp',
      paused: false,
    });
  });

  it('leaves /healthz and /readyz open for probes', async () => {
    await request(f.admin).get('/healthz').expect(200);
    expect((await request(f.admin).get('/readyz').expect(200)).body).toMatchObject({ status: 'ready', redis: 'up' });
  });
});

describe('admin API', () => {
  it('summarises every queue', async () => {
    const res = await request(f.admin).get('/admin/api/queues').set(bearer).expect(200);
    const names = res.body.queues.map((q: { queue: string }) => q.queue);
    expect(names).toEqual(
      expect.arrayContaining(['payment.result', 'fx.result', 'quarantine', 'deliver.erp', 'deliver.crm']),
    );
    expect(res.body.queues[0]).toMatchObject({
      counts: expect.objectContaining({ waiting: expect.any(Number) }),
      paused: false,
    });
    expect(res.body.targets).toEqual([
      { target: 'erp', paused: false },
      { target: 'crm', paused: false },
    ]);
  });

  it('looks an event up by event id and by request_id, with each delivery and every attempt', async () => {
    const body = '{"type":"MERCH","data":{"request_id":"PAY-LOOKUP-1","account_no":"6222"}}';
    await platform.send(f.receiver.app, platform.signed('payment.result', { body })).expect(200);
    await crm.waitFor(() => crm.successes().length === 1);
    await erp.waitFor(() => erp.requests.length >= 1);
    const eventId = String(crm.requests[0]!.headers['webhook-id']);
    await waitUntil(
      async () =>
        (await request(f.admin).get(`/admin/api/events/${eventId}`).set(bearer)).body.deliveries?.every(
          (d: { state: string }) => d.state === 'completed',
        ),
      5000,
      'deliveries completed',
    );

    const res = await request(f.admin).get(`/admin/api/events/${eventId}`).set(bearer).expect(200);
    expect(res.body).toMatchObject({
      eventId,
      eventType: 'payment.result',
      payload: { data: { request_id: 'PAY-LOOKUP-1', account_no: '***' } },
    });
    const crmDelivery = res.body.deliveries.find((d: { target: string }) => d.target === 'crm');
    expect(crmDelivery).toMatchObject({
      state: 'completed',
      attemptsMade: 2,
      failedAttempts: [{ attempt: 1, status: 503 }],
      result: { status: 200 },
    });

    const byRequest = await request(f.admin).get('/admin/api/events?requestId=PAY-LOOKUP-1').set(bearer).expect(200);
    expect(byRequest.body.events.map((e: { eventId: string }) => e.eventId)).toEqual([eventId]);
    await request(f.admin).get('/admin/api/events/evt_nope').set(bearer).expect(404);
  });

  it('lists quarantined notifications and replays one with a corrected body', async () => {
    await platform.send(f.receiver.app, platform.signed('fx.result', { body: '{"type":"MERCH", broken' })).expect(200);
    const list = await request(f.admin).get('/admin/api/quarantine').set(bearer).expect(200);
    expect(list.body.quarantined).toHaveLength(1);
    const item = list.body.quarantined[0];
    expect(item).toMatchObject({ eventType: 'fx.result', errors: [expect.stringMatching(/not JSON/)] });

    const still = await request(f.admin)
      .post('/admin/api/quarantine/replay')
      .set(bearer)
      .send({ ids: [item.id] })
      .expect(200);
    expect(still.body.results[0]).toMatchObject({ outcome: 'still_invalid' });
    const fixed = await request(f.admin)
      .post('/admin/api/quarantine/replay')
      .set(bearer)
      .send({ ids: [item.id], body: '{"type":"MERCH","data":{"fixed":true}}' })
      .expect(200);

    expect(fixed.body.results[0]).toEqual({
      id: item.id,
      outcome: 'queued',
      eventId: item.eventId,
      originalSha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      correctedSha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    await erp.waitFor(() => erp.requests.some((r) => r.headers['webhook-id'] === item.eventId));
    expect((await request(f.admin).get('/admin/api/quarantine').set(bearer)).body.quarantined).toHaveLength(0);
    expect(f.adminLogs.find((l) => l.action === 'quarantine.replay' && l.corrected === true)).toMatchObject({
      principal: 'token',
      items: [item.id],
      eventIds: [item.eventId],
      outcomes: ['queued'],
    });
  });

  it('pauses a target so its deliveries wait, and resumes it', async () => {
    await request(f.admin).post('/admin/api/targets/erp/pause').set(bearer).expect(200);
    const before = erp.requests.length;
    await platform.send(f.receiver.app, platform.signed('settlement.result')).expect(200);
    await new Promise((r) => setTimeout(r, 400));
    expect(erp.requests.length).toBe(before);
    const summary = await request(f.admin).get('/admin/api/targets').set(bearer).expect(200);
    expect(summary.body.targets).toContainEqual({ target: 'erp', paused: true });

    await request(f.admin).post('/admin/api/targets/erp/resume').set(bearer).expect(200);
    await erp.waitFor(() => erp.requests.length === before + 1);
    expect(f.adminLogs.find((l) => l.action === 'target.pause')).toMatchObject({
      principal: 'token',
      target: 'erp',
      from: expect.any(String),
    });
    expect(f.adminLogs.find((l) => l.action === 'target.resume')).toMatchObject({ principal: 'token', target: 'erp' });
    await request(f.admin).post('/admin/api/targets/nope/pause').set(bearer).expect(404);
  });
});

describe('with no admin credential configured', () => {
  it('refuses the protected routes and says why', async () => {
    const { buildHarness } = await import('./support/harness');
    const h = buildHarness({ PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64 });
    const { wireAdmin } = await import('../src/admin/wiring');
    const { createLogger } = await import('../src/logging/logger');
    const admin = wireAdmin(h.config, h.pipeline, h.metrics.registry, createLogger('error'));
    const res = await request(admin).get('/admin/api/queues');
    expect(res.status).toBe(503);
    expect(res.body.message).toMatch(/ADMIN_TOKEN/);
    await request(admin).get('/metrics').expect(503);
    await h.close();
  });
});
