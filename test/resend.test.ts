import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import request from 'supertest';
import { stringify } from 'yaml';
import { runCli } from '../src/cli/run';
import {
  ADMIN_TEST_TOKEN,
  buildForwarding,
  sendDeliveredAndDeadLettered,
  waitUntil,
  type ForwardingHarness,
} from './support/forwarding-harness';
import { FakePlatform } from './support/platform';
import { TargetServer } from './support/target-server';

const platform = new FakePlatform();
const bearer = { authorization: `Bearer ${ADMIN_TEST_TOKEN}` };
const dir = mkdtempSync(path.join(tmpdir(), 'resend-'));
let f: ForwardingHarness;
let erp: TargetServer;
let crm: TargetServer;
let crmUp = false;
let eventId: string;

beforeAll(async () => {
  erp = await TargetServer.start();
  crm = await TargetServer.start(() => ({ status: crmUp ? 200 : 500 }));
  f = buildForwarding(platform, [
    { name: 'erp', url: erp.url },
    { name: 'crm', url: crm.url, maxAttempts: 1, events: ['payment.result'] },
    { name: 'fx-only', url: erp.url, events: ['fx.result'] },
  ]);
  eventId = await sendDeliveredAndDeadLettered(f, erp, 'erp', 'crm');
});
afterAll(async () => {
  await f.close();
  await erp.close();
  await crm.close();
  rmSync(dir, { recursive: true, force: true });
});

const idsAt = (target: TargetServer) => target.requests.map((r) => r.headers['webhook-id']);

describe('resending an event', () => {
  it('through the API: every subscribed target gets it again, delivered or dead-lettered before, with the same webhook-id; audited', async () => {
    crmUp = true;
    const res = await request(f.admin).post(`/admin/api/events/${eventId}/resend`).set(bearer).send({}).expect(200);

    expect(res.body).toEqual({
      eventId,
      targets: [
        { target: 'erp', outcome: 'resent' },
        { target: 'crm', outcome: 'resent' },
      ],
    });
    await erp.waitFor(() => erp.successes().length === 2);
    await crm.waitFor(() => crm.successes().length === 1);
    expect(idsAt(erp)).toEqual([eventId, eventId]);
    expect(idsAt(crm)).toEqual([eventId, eventId]);
    expect(await f.deadLetters.list({ target: 'crm' })).toHaveLength(0);
    expect(f.adminLogs.find((l) => l.audit === true && l.action === 'event.resend')).toMatchObject({
      items: [eventId],
      principal: expect.any(String),
    });
  });

  it('through the CLI, to one target: it arrives again with the same webhook-id', async () => {
    await waitUntil(
      async () => (await f.pipeline.deliveryQueue('erp')!.getJobState(eventId)) === 'completed',
      5000,
      'erp completed again',
    );
    const file = path.join(dir, 'config.yaml');
    writeFileSync(
      file,
      stringify({ targets: f.config.targets.map((t) => ({ name: t.name, url: t.url, events: t.events })) }),
    );
    const out: string[] = [];
    const log = new PassThrough();
    const audit: string[] = [];
    log.on('data', (c: Buffer) => audit.push(c.toString()));
    const code = await runCli(['event', 'resend', eventId, '--target', 'erp'], {
      env: { CONFIG_FILE: file, REDIS_URL: f.config.redisUrl, QUEUE_PREFIX: f.config.queuePrefix },
      out: (l) => out.push(l),
      log,
    });

    expect(code).toBe(0);
    expect(out).toEqual([`resent       erp/${eventId}`]);
    await erp.waitFor(() => erp.successes().length === 3);
    expect(idsAt(erp)).toEqual([eventId, eventId, eventId]);
    expect(crm.requests).toHaveLength(2); // only the named target
    expect(audit.join('')).toContain('"action":"event.resend"');
  });

  it('an unknown id answers 404, an unknown or unsubscribed target 404 or 400', async () => {
    const unknown = await request(f.admin)
      .post('/admin/api/events/evt_0000000000000000000000000000000000000000/resend')
      .set(bearer)
      .send({})
      .expect(404);
    expect(unknown.body.message).toMatch(/no event evt_0{40}/);
    await request(f.admin).post(`/admin/api/events/${eventId}/resend`).set(bearer).send({ target: 'nope' }).expect(404);
    const notSubscribed = await request(f.admin)
      .post(`/admin/api/events/${eventId}/resend`)
      .set(bearer)
      .send({ target: 'fx-only' })
      .expect(400);
    expect(notSubscribed.body.message).toMatch(/does not subscribe to payment.result/);
  });

  it('once no job holds the body any more (past the completed-job retention), 410 says the body is gone', async () => {
    const file = path.join(dir, 'short-retention.yaml');
    writeFileSync(file, stringify({ retention: { completed: { ageSeconds: 1, count: 10000 } } }));
    const sink = await TargetServer.start();
    const short = buildForwarding(platform, [{ name: 'sink', url: sink.url }], { CONFIG_FILE: file });
    try {
      await platform
        .send(short.receiver.app, platform.signed('payment.result', { body: '{"type":"MERCH","data":{"n":1}}' }))
        .expect(200);
      await sink.waitFor(() => sink.successes().length === 1);
      const goneId = String(sink.requests[0]!.headers['webhook-id']);
      await new Promise((r) => setTimeout(r, 1500));
      // BullMQ applies the age limit when a later job of the same queue completes.
      await platform
        .send(short.receiver.app, platform.signed('payment.result', { body: '{"type":"MERCH","data":{"n":2}}' }))
        .expect(200);
      await sink.waitFor(() => sink.successes().length === 2);
      await waitUntil(
        async () => (await short.pipeline.deliveryQueue('sink')!.getJob(goneId)) === undefined,
        5000,
        'delivery job removed by retention',
      );

      const res = await request(short.admin)
        .post(`/admin/api/events/${goneId}/resend`)
        .set(bearer)
        .send({})
        .expect(410);
      expect(res.body).toEqual({
        error: 'body_gone',
        message: expect.stringMatching(/its body is gone: delivered jobs are kept 1 s/),
      });
    } finally {
      await short.close();
      await sink.close();
    }
  });
});

describe('resending to a target that lost its job', () => {
  it("copies the event, not another target's dead letter: no lastFailure, its own target name", async () => {
    const ok = await TargetServer.start();
    const down = await TargetServer.start(() => ({ status: 500 }));
    const g = buildForwarding(platform, [
      { name: 'ok', url: ok.url },
      { name: 'down', url: down.url, maxAttempts: 1 },
    ]);
    try {
      await platform.send(g.receiver.app, platform.signed('payment.result')).expect(200);
      await ok.waitFor(() => ok.successes().length === 1);
      const id = String(ok.requests[0]!.headers['webhook-id']);
      await waitUntil(
        async () => (await g.deadLetters.list({ target: 'down' })).length === 1,
        10000,
        'down dead-lettered',
      );
      const okQueue = g.pipeline.deliveryQueue('ok')!;
      await waitUntil(async () => (await okQueue.getJobState(id)) === 'completed', 5000, 'ok completed');
      // Retention removed ok's job; the body is now found only in down's dead letter.
      await (await okQueue.getJob(id))!.remove();
      expect((await g.pipeline.deliveryQueue('down')!.getJob(id))!.data.lastFailure).toBeDefined();

      await request(g.admin).post(`/admin/api/events/${id}/resend`).set(bearer).send({ target: 'ok' }).expect(200);
      const resent = await okQueue.getJob(id);
      expect(resent!.data.target).toBe('ok');
      expect(resent!.data.lastFailure).toBeUndefined();
      await ok.waitFor(() => ok.successes().length === 2);
    } finally {
      await g.close();
      await ok.close();
      await down.close();
    }
  });
});
