import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { postRaw } from './support/post-raw';
import { testRedisUrl, uniquePrefix } from './support/harness';
import { OtlpReceiver, type ReceivedSpan } from './support/otlp-receiver';
import { FakePlatform } from './support/platform';
import { ServiceProcess } from './support/service-process';
import { TargetServer, type Behaviour } from './support/target-server';
import { tempDir } from './support/temp-dir';
import { eventDefinition } from '../src/model/event-table';

// Real service processes exporting to a real local OTLP/HTTP receiver; a loaded 2-core machine starts them slowly.
jest.setTimeout(90000);

const SERVER = 2; // OTLP's SPAN_KIND_SERVER
const CLIENT = 3; // SPAN_KIND_CLIENT
const ADMIN_TOKEN = 'tracing-test-admin-token';
const platform = new FakePlatform();
let otlp: OtlpReceiver;
const started: ServiceProcess[] = [];
const targets: TargetServer[] = [];

beforeAll(async () => {
  otlp = await OtlpReceiver.start();
});

afterAll(async () => {
  await otlp.close();
});

afterEach(async () => {
  await Promise.all(started.splice(0).map((s) => s.kill('SIGKILL')));
  await Promise.all(targets.splice(0).map((t) => t.close()));
});

function envFor(target: TargetServer, backoff: { initialMs: number; maxMs: number }): Record<string, string> {
  const file = path.join(tempDir('tracing'), 'config.yaml');
  writeFileSync(file, stringify({ targets: [{ name: 'ledger', url: target.url, events: ['*'], backoff }] }));
  return {
    REDIS_URL: testRedisUrl(),
    QUEUE_PREFIX: uniquePrefix(),
    PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
    CONFIG_FILE: file,
    ADMIN_TOKEN,
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_SERVICE_NAME: 'webhook-receiver-test',
    OTEL_TRACES_SAMPLER: 'always_on',
    OTEL_BSP_SCHEDULE_DELAY: '100',
  };
}

async function service(env: Record<string, string>): Promise<ServiceProcess> {
  const s = await ServiceProcess.start(env);
  started.push(s);
  return s;
}

async function target(behaviour: Behaviour): Promise<TargetServer> {
  const t = await TargetServer.start(behaviour);
  targets.push(t);
  return t;
}

/** Refuses the first request (503), then accepts. */
const refuseOnce = (n: number) => (n === 0 ? { status: 503 } : { status: 200 });

function serverSpanOf(eventId: string): ReceivedSpan | undefined {
  return otlp.spans.find((s) => s.kind === SERVER && s.attributes['webhook.event_id'] === eventId);
}

function attemptsOf(traceId: string): ReceivedSpan[] {
  return otlp.spans
    .filter((s) => s.traceId === traceId && s.name === 'deliver ledger')
    .sort((a, b) => Number(a.attributes['webhook.attempt']) - Number(b.attributes['webhook.attempt']));
}

async function eventView(
  s: ServiceProcess,
  eventId: string,
): Promise<{ traceId?: string; deliveries: { state: string }[] }> {
  const res = await fetch(`http://127.0.0.1:${s.adminPort}/admin/api/events/${eventId}`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { traceId?: string; deliveries: { state: string }[] };
}

describe('tracing (OTLP/HTTP JSON to a local receiver)', () => {
  it('when a target refuses once then accepts, then the notify request, its Redis call and both attempts are one trace, the target saw it, and the event view shows it', async () => {
    const ledger = await target(refuseOnce);
    const all = await service(envFor(ledger, { initialMs: 200, maxMs: 1000 }));
    const n = platform.signed('payment.result');
    await postRaw(`http://127.0.0.1:${all.port}`, n.target, n.headers, n.body).expect(200);

    await ledger.waitFor(() => ledger.successes().length === 1, 20000);
    const eventId = String(ledger.requests[0]!.headers['webhook-id']);
    await otlp.waitFor(
      () => serverSpanOf(eventId) !== undefined && attemptsOf(serverSpanOf(eventId)!.traceId).length === 2,
    );

    const server = serverSpanOf(eventId)!;
    const { traceId } = server;
    expect(server).toMatchObject({
      parentSpanId: '',
      service: 'webhook-receiver-test',
      name: `POST ${eventDefinition('payment.result').path}`,
    });
    expect(server.attributes).toMatchObject({
      'webhook.event_type': 'payment.result',
      'webhook.outcome': 'accepted',
      'webhook.environment': expect.any(String),
      'http.response.status_code': 200,
    });
    // Never the nonce, the signatures or anything of the payload.
    const values = Object.values(server.attributes).map(String);
    for (const secret of Object.values(n.headers)) expect(values).not.toContain(secret);
    expect(Object.keys(server.attributes).filter((k) => /nonce|signature|payload|body/i.test(k))).toEqual([]);

    const redis = otlp.spans.filter((s) => s.traceId === traceId && s.name === 'redis ingest');
    expect(redis).toHaveLength(1);
    expect(redis[0]).toMatchObject({
      parentSpanId: server.spanId,
      kind: CLIENT,
      attributes: { 'db.system.name': 'redis' },
    });

    const [first, second] = attemptsOf(traceId);
    expect(first).toMatchObject({
      parentSpanId: server.spanId,
      attributes: {
        'webhook.attempt': 1,
        'webhook.target': 'ledger',
        'http.response.status_code': 503,
        'error.type': 'http_status',
        'webhook.outcome': 'retry',
      },
    });
    expect(second).toMatchObject({
      parentSpanId: server.spanId,
      attributes: { 'webhook.attempt': 2, 'http.response.status_code': 200, 'webhook.outcome': 'delivered' },
    });

    // Each request carried its own attempt's span as the parent, in the notification's trace.
    expect(ledger.requests.map((r) => r.headers.traceparent)).toEqual([
      `00-${traceId}-${first!.spanId}-01`,
      `00-${traceId}-${second!.spanId}-01`,
    ]);

    expect((await eventView(all, eventId)).traceId).toBe(traceId);

    // Logs and metrics point at the same trace.
    expect(all.lines.find((l) => l.message === 'notification received' && l.eventId === eventId)).toMatchObject({
      trace_id: traceId,
      span_id: server.spanId,
    });
    expect(all.lines.find((l) => l.message === 'delivered' && l.eventId === eventId)).toMatchObject({
      trace_id: traceId,
      span_id: second!.spanId,
    });
    const metrics = await fetch(`http://127.0.0.1:${all.adminPort}/metrics`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(metrics.headers.get('content-type')).toMatch(/^application\/openmetrics-text/);
    const text = await metrics.text();
    expect(text).toMatch(
      new RegExp(
        `^webhook_delivery_latency_seconds_bucket\\{[^}]*target="ledger"[^}]*\\} \\d+ # \\{trace_id="${traceId}"\\}`,
        'm',
      ),
    );
    expect(text).toMatch(
      new RegExp(`^webhook_ack_latency_seconds_bucket\\{[^}]*\\} \\d+ # \\{trace_id="${traceId}"\\}`, 'm'),
    );
    expect(otlp.refused).toEqual([]);

    // A resend is a span of its own, linked to the trace; its attempt joins the trace.
    const resend = await fetch(`http://127.0.0.1:${all.adminPort}/admin/api/events/${eventId}/resend`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(resend.status).toBe(200);
    await otlp.waitFor(
      (spans) =>
        spans.some((s) => s.name === 'webhook resend' && s.attributes['webhook.event_id'] === eventId) &&
        attemptsOf(traceId).length === 3,
    );
    const operator = otlp.spans.find(
      (s) => s.name === 'webhook resend' && s.attributes['webhook.event_id'] === eventId,
    )!;
    expect(operator.traceId).not.toBe(traceId);
    expect(operator.links).toEqual([{ traceId, spanId: server.spanId }]);
    // The new series counts its attempts from 1 again.
    const third = attemptsOf(traceId).find((s) => s.spanId !== first!.spanId && s.spanId !== second!.spanId)!;
    expect(third).toMatchObject({
      parentSpanId: server.spanId,
      attributes: { 'webhook.attempt': 1, 'webhook.outcome': 'delivered' },
    });
    expect(ledger.requests[2]!.headers.traceparent).toBe(`00-${traceId}-${third.spanId}-01`);
  });

  it('when a notification arrives with a forged traceparent, then it is a link of the server span, never its parent, and the target never sees it', async () => {
    const ledger = await target(() => ({ status: 200 }));
    const all = await service(envFor(ledger, { initialMs: 200, maxMs: 1000 }));
    const forgedTrace = randomBytes(16).toString('hex');
    const forgedSpan = randomBytes(8).toString('hex');
    const n = platform.signed('fx.result');
    await postRaw(
      `http://127.0.0.1:${all.port}`,
      n.target,
      { ...n.headers, traceparent: `00-${forgedTrace}-${forgedSpan}-01` },
      n.body,
    ).expect(200);

    await ledger.waitFor(() => ledger.successes().length === 1);
    const eventId = String(ledger.requests[0]!.headers['webhook-id']);
    await otlp.waitFor(
      () => serverSpanOf(eventId) !== undefined && attemptsOf(serverSpanOf(eventId)!.traceId).length === 1,
    );
    const server = serverSpanOf(eventId)!;

    expect(server.traceId).not.toBe(forgedTrace);
    expect(server.parentSpanId).toBe('');
    expect(server.links).toEqual([{ traceId: forgedTrace, spanId: forgedSpan }]);
    expect(otlp.spans.filter((s) => s.traceId === forgedTrace)).toEqual([]);
    expect(ledger.requests[0]!.headers.traceparent).toMatch(new RegExp(`^00-${server.traceId}-`));
  });

  it('when the worker is killed between two attempts, then the attempt a new worker makes is still in the trace', async () => {
    const ledger = await target(refuseOnce);
    // The retry waits 3 to 6 s: time to kill the worker and start another.
    const env = envFor(ledger, { initialMs: 6000, maxMs: 6000 });
    const receiver = await service({ ...env, ROLE: 'receiver' });
    const first = await service({ ...env, ROLE: 'worker' });
    const n = platform.signed('settlement.result');
    await postRaw(`http://127.0.0.1:${receiver.port}`, n.target, n.headers, n.body).expect(200);

    await ledger.waitFor(() => ledger.requests.length === 1 && ledger.requests[0]!.answered === 503);
    const eventId = String(ledger.requests[0]!.headers['webhook-id']);
    // The first attempt's span is exported before the worker dies (a SIGKILL loses what it still holds).
    await otlp.waitFor(
      () => serverSpanOf(eventId) !== undefined && attemptsOf(serverSpanOf(eventId)!.traceId).length === 1,
    );
    expect(await first.kill('SIGKILL')).toBe('SIGKILL');
    expect(ledger.requests).toHaveLength(1);

    const second = await service({ ...env, ROLE: 'worker' });
    await ledger.waitFor(() => ledger.successes().length === 1, 20000);
    const { traceId, spanId } = serverSpanOf(eventId)!;
    await otlp.waitFor(() => attemptsOf(traceId).length === 2);

    const [before, after] = attemptsOf(traceId);
    expect(before).toMatchObject({
      parentSpanId: spanId,
      attributes: { 'webhook.attempt': 1, 'webhook.outcome': 'retry' },
    });
    expect(after).toMatchObject({
      parentSpanId: spanId,
      attributes: { 'webhook.attempt': 2, 'webhook.outcome': 'delivered' },
    });
    expect(ledger.requests[1]!.headers.traceparent).toBe(`00-${traceId}-${after!.spanId}-01`);
    expect(second.lines.find((l) => l.message === 'delivered' && l.eventId === eventId)).toMatchObject({
      trace_id: traceId,
    });
    expect((await eventView(receiver, eventId)).traceId).toBe(traceId);
  });
});
