import { PassThrough } from 'node:stream';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { stringify } from 'yaml';
import { runCli } from '../src/cli/run';
import { deliveryStory } from '../src/forwarding/delivery-story';
import type { DeliveryJob } from '../src/model/jobs';
import {
  ADMIN_TEST_TOKEN,
  buildForwarding,
  sendDeliveredAndDeadLettered,
  waitUntil,
  type ForwardingHarness,
} from './support/forwarding-harness';
import { FakePlatform } from './support/platform';
import { TargetServer } from './support/target-server';
import { tempDir } from './support/temp-dir';

// The whole story of an event's deliveries: every attempt of every series (the receipt's, a dead
// letter's replay, a resend), in order, each series marked by what started it, who, and when.
const platform = new FakePlatform();
const bearer = { authorization: `Bearer ${ADMIN_TEST_TOKEN}` };
let f: ForwardingHarness;
let erp: TargetServer;
let crm: TargetServer;
let crmUp = false;
let eventId: string;

beforeAll(async () => {
  erp = await TargetServer.start((n) => ({ status: n === 0 ? 503 : 200 }));
  crm = await TargetServer.start(() => ({ status: crmUp ? 200 : 500 }));
  f = buildForwarding(platform, [
    { name: 'erp', url: erp.url, maxAttempts: 3 },
    { name: 'crm', url: crm.url, maxAttempts: 2 },
  ]);
  eventId = await sendDeliveredAndDeadLettered(f, erp, 'erp', 'crm');
});
afterAll(async () => {
  await f.close();
  await erp.close();
  await crm.close();
});

const view = async () =>
  (await request(f.admin).get(`/admin/api/events/${eventId}`).set(bearer).expect(200)).body as {
    deliveries: {
      target: string;
      state: string;
      attempts: { series: number; attempt: number; outcome: string; status?: number }[];
      series: {
        n: number;
        trigger: string;
        by: string;
        at: string;
        attempts: { attempt: number; outcome: string; status?: number }[];
      }[];
    }[];
  };
const delivery = async (target: string) => (await view()).deliveries.find((d) => d.target === target)!;
const brief = (attempts: { attempt: number; outcome: string; status?: number }[]) =>
  attempts.map((a) => `${a.attempt}:${a.outcome}:${a.status}`);

describe("an event's delivery story", () => {
  it('before any operator acts: one series per delivery, started by the receipt', async () => {
    const erpView = await delivery('erp');
    expect(erpView.series.map((s) => [s.trigger, s.by])).toEqual([['received', 'platform']]);
    expect(brief(erpView.series[0]!.attempts)).toEqual(['1:failed:503', '2:delivered:200']);
    const crmView = await delivery('crm');
    expect(crmView.state).toBe('failed');
    expect(brief(crmView.series[0]!.attempts)).toEqual(['1:failed:500', '2:failed:500']);
  });

  it('a resend of the delivered erp delivery and a replay of the crm dead letter each add a marked series; every earlier attempt stays', async () => {
    const before = Date.now();
    await request(f.admin).post(`/admin/api/events/${eventId}/resend`).set(bearer).send({ target: 'erp' }).expect(200);
    await erp.waitFor(() => erp.successes().length === 2);
    crmUp = true;
    const replayed = await request(f.admin)
      .post('/admin/api/dead-letters/replay')
      .set(bearer)
      .send({ ids: [`crm/${eventId}`] })
      .expect(200);
    expect(replayed.body.replayed).toEqual([`crm/${eventId}`]);
    await crm.waitFor(() => crm.successes().length === 1);
    await waitUntil(
      async () => (await delivery('crm')).state === 'completed' && (await delivery('erp')).state === 'completed',
      5000,
      'both completed',
    );

    const erpView = await delivery('erp');
    expect(erpView.series.map((s) => [s.n, s.trigger, s.by])).toEqual([
      [1, 'received', 'platform'],
      [2, 'resend', 'token'],
    ]);
    expect(brief(erpView.series[0]!.attempts)).toEqual(['1:failed:503', '2:delivered:200']);
    expect(brief(erpView.series[1]!.attempts)).toEqual(['1:delivered:200']);
    expect(Date.parse(erpView.series[1]!.at)).toBeGreaterThanOrEqual(before - 1000);
    // The flat list: every attempt of both series, in order, each with its series' number.
    expect(erpView.attempts.map((a) => `${a.series}.${a.attempt}:${a.outcome}`)).toEqual([
      '1.1:failed',
      '1.2:delivered',
      '2.1:delivered',
    ]);

    const crmView = await delivery('crm');
    expect(crmView.series.map((s) => [s.n, s.trigger, s.by])).toEqual([
      [1, 'received', 'platform'],
      [2, 'replay', 'token'],
    ]);
    expect(brief(crmView.series[0]!.attempts)).toEqual(['1:failed:500', '2:failed:500']);
    expect(brief(crmView.series[1]!.attempts)).toEqual(['1:delivered:200']);
    expect(crmView.attempts.map((a) => `${a.series}.${a.attempt}:${a.outcome}`)).toEqual([
      '1.1:failed',
      '1.2:failed',
      '2.1:delivered',
    ]);
  });

  it('the CLI prints each series with what started it and who, and its attempts numbered within it; a CLI resend is marked with the CLI user', async () => {
    const file = path.join(tempDir('delivery-story'), 'config.yaml');
    writeFileSync(
      file,
      stringify({ targets: f.config.targets.map((t) => ({ name: t.name, url: t.url, events: t.events })) }),
    );
    const env = { CONFIG_FILE: file, REDIS_URL: f.config.redisUrl, QUEUE_PREFIX: f.config.queuePrefix };
    const log = new PassThrough();
    log.resume();
    expect(await runCli(['event', 'resend', eventId, '--target', 'crm'], { env, out: () => undefined, log })).toBe(0);
    await crm.waitFor(() => crm.successes().length === 2);
    await waitUntil(async () => (await delivery('crm')).state === 'completed', 5000, 'crm completed again');

    const out: string[] = [];
    expect(await runCli(['event', eventId], { env, out: (l) => out.push(l), log })).toBe(0);
    const lines = out.join('\n').split('\n');
    // The attempts table's crm rows: `crm  <series>[.<attempt>]  <at>  <outcome>  …  [by <who>]`.
    const crmRows = lines
      .filter((l) => /^crm\s+\d+(\.\d+)?\s/.test(l))
      .map((l) => {
        const cells = l.split(/\s{2,}/);
        return [cells[1], cells[3], /by (\S+)/.exec(l)?.[1] ?? ''];
      });
    expect(crmRows).toEqual([
      ['1', 'series 1: received', 'platform'],
      ['1.1', 'failed', ''],
      ['1.2', 'failed', ''],
      ['2', 'series 2: replay', 'token'],
      ['2.1', 'delivered', ''],
      ['3', 'series 3: resend', expect.stringMatching(/^cli:/)],
      ['3.1', 'delivered', ''],
    ]);
  });
});

describe('deliveryStory, from a job and its log', () => {
  const data = {
    eventId: 'evt_1',
    eventType: 'payment.result',
    receivedAt: '2026-11-26T05:00:00.000Z',
    target: 'erp',
  } as unknown as DeliveryJob;
  const failure = (attempt: number) =>
    JSON.stringify({
      at: `2026-11-26T05:00:0${attempt}.000Z`,
      attempt,
      target: 'erp',
      error: 'HTTP 503',
      status: 503,
      errorClass: 'http_status',
    });

  it('a delivery a resend added (no job before) starts with the resend, not the receipt', () => {
    const job = {
      data: { ...data, firstSeries: { series: 'resend' as const, by: 'token', at: '2026-11-26T06:00:00.000Z' } },
      returnvalue: { status: 200, latencyMs: 3 },
      finishedOn: Date.parse('2026-11-26T06:00:01.000Z'),
      attemptsMade: 2,
    };
    const story = deliveryStory(job, 'completed', [failure(1)]);
    expect(story).toEqual([
      {
        n: 1,
        trigger: 'resend',
        by: 'token',
        at: '2026-11-26T06:00:00.000Z',
        attempts: [
          expect.objectContaining({ series: 1, attempt: 1, outcome: 'failed', status: 503 }),
          {
            series: 1,
            attempt: 2,
            outcome: 'delivered',
            status: 200,
            latencyMs: 3,
            at: '2026-11-26T06:00:01.000Z',
            target: 'erp',
          },
        ],
      },
    ]);
  });

  it('a job still failing after a replay shows the replay series with no delivered attempt; lines not ours are skipped', () => {
    const mark = JSON.stringify({ series: 'replay', by: 'basic:ops', at: '2026-11-26T05:10:00.000Z' });
    const story = deliveryStory({ data, returnvalue: null, finishedOn: undefined, attemptsMade: 1 }, 'failed', [
      failure(1),
      failure(2),
      'not json',
      mark,
      failure(1),
    ]);
    expect(story.map((s) => [s.n, s.trigger, s.by, s.attempts.map((a) => `${a.attempt}:${a.outcome}`)])).toEqual([
      [1, 'received', 'platform', ['1:failed', '2:failed']],
      [2, 'replay', 'basic:ops', ['1:failed']],
    ]);
  });
});
