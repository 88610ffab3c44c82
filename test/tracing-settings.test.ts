import { execFile, execFileSync } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { OtlpReceiver } from './support/otlp-receiver';
import { maskedEndpoint, tracingSettings } from '../src/tracing/settings';
import { formatTraceparent, parseTraceparent, traceIdOf } from '../src/tracing/traceparent';
import { tracing } from '../src/tracing/tracing';

describe('tracing settings (the standard OTEL_* variables)', () => {
  it('when no OTLP endpoint is set, or the SDK is disabled, then tracing is off', () => {
    expect(tracingSettings({})).toEqual({ on: false, why: 'no OTEL_EXPORTER_OTLP_ENDPOINT' });
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'TRUE' })).toMatchObject({
      on: false,
    });
    expect(
      tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }),
    ).toMatchObject({ on: false });
  });

  it('when an endpoint is set, then the base one gets /v1/traces, the traces one is used as given, and protobuf is the default protocol', () => {
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' })).toMatchObject({
      on: true,
      endpoint: 'http://c:4318/v1/traces',
      protocol: 'http/protobuf',
    });
    expect(
      tracingSettings({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://t/x',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      }),
    ).toMatchObject({ on: true, endpoint: 'http://t/x', protocol: 'http/json' });
  });

  it('when the protocol is one the service does not speak, then it is refused with the ones it does', () => {
    expect(() =>
      tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
    ).toThrow('OTEL_EXPORTER_OTLP_PROTOCOL: grpc is not supported; use http/protobuf or http/json');
  });

  it('when the endpoint carries credentials, then its log form masks them', () => {
    expect(maskedEndpoint('https://user:secret@collector:4318/v1/traces?key=k')).toBe(
      'https://user:***@collector:4318/v1/traces?***',
    );
  });
});

describe('traceparent values', () => {
  it('reads and writes version 00, and refuses anything else', () => {
    const value = formatTraceparent('0af7651916cd43dd8448eb211c80319c', 'b7ad6b7169203331', 1);
    expect(value).toBe('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
    expect(parseTraceparent(value)).toEqual({
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      flags: 1,
    });
    expect(traceIdOf(value)).toBe('0af7651916cd43dd8448eb211c80319c');
    for (const bad of [
      undefined,
      42,
      '',
      `01-${'a'.repeat(32)}-${'b'.repeat(16)}-01`,
      `00-${'0'.repeat(32)}-${'b'.repeat(16)}-01`,
      `00-${'A'.repeat(32)}-${'b'.repeat(16)}-01`,
    ]) {
      expect(parseTraceparent(bad)).toBeUndefined();
    }
  });
});

describe('tracing off', () => {
  it('when the SDK is not started, then every hook is a no-op that returns nothing', () => {
    expect(tracing.on).toBe(false);
    expect(
      tracing.notify('payment.result', '/x', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'),
    ).toBeUndefined();
    expect(
      tracing.attempt({ trace: undefined, target: 't', eventId: 'e', eventType: 'payment.result', attempt: 1 }),
    ).toBeUndefined();
    expect(tracing.operator('resend', 'token')).toBeUndefined();
  });

  it('when no endpoint is configured, then starting tracing loads no OpenTelemetry module at all', () => {
    const root = path.resolve(__dirname, '..');
    const script = [
      "const { startTracing } = require('./src/tracing/start');",
      'startTracing({}, () => undefined).then((running) => {',
      "  const loaded = Object.keys(require.cache).filter((k) => k.includes('@opentelemetry'));",
      '  process.stdout.write(JSON.stringify({ running: running === undefined ? null : true, loaded }));',
      '});',
    ].join('\n');
    const env: NodeJS.ProcessEnv = { ...process.env, TS_NODE_SWC: 'true' };
    delete env.OTEL_EXPORTER_OTLP_ENDPOINT;
    delete env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
    const off = JSON.parse(
      execFileSync(process.execPath, ['-r', 'ts-node/register', '-e', script], { cwd: root, env }).toString(),
    ) as { running: null; loaded: string[] };
    expect(off).toEqual({ running: null, loaded: [] });
    // The same script with an endpoint does load the SDK: the check above can fail.
    const on = JSON.parse(
      execFileSync(
        process.execPath,
        [
          '-r',
          'ts-node/register',
          '-e',
          script.replace('startTracing({}', "startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' }"),
        ],
        { cwd: root, env },
      ).toString(),
    ) as { running: boolean; loaded: string[] };
    expect(on.running).toBe(true);
    expect(on.loaded.length).toBeGreaterThan(0);
  });
});

describe("tracing on (the SDK's batch span processor and OTLP exporter)", () => {
  let collector: OtlpReceiver;
  beforeEach(async () => (collector = await OtlpReceiver.start()));
  afterEach(() => collector.close());

  /** Starts tracing in a child process (the exporter loads its transport by a dynamic import, which Jest's sandbox refuses), ends one notify span, stops. */
  async function traceOneNotification(env: Record<string, string>): Promise<void> {
    const script = [
      "const { startTracing } = require('./src/tracing/start');",
      "const { tracing } = require('./src/tracing/tracing');",
      'startTracing(process.env, (_k, m, f) => process.stderr.write(m + JSON.stringify(f))).then((running) => {',
      "  tracing.notify('payment.result', '/notify/payment-result', undefined).end(200);",
      '  return running.shutdown();',
      '});',
    ].join('\n');
    const { stderr } = await promisify(execFile)(process.execPath, ['-r', 'ts-node/register', '-e', script], {
      cwd: path.resolve(__dirname, '..'),
      env: { ...process.env, TS_NODE_SWC: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint, ...env },
    });
    expect(stderr).toBe('');
  }

  it('when no protocol is set, then the span leaves as OTLP protobuf at shutdown, with the headers of OTEL_EXPORTER_OTLP_HEADERS', async () => {
    await traceOneNotification({ OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer collector-secret' });
    expect(collector.requests).toHaveLength(1);
    expect(collector.requests[0]).toMatchObject({ path: '/v1/traces', contentType: 'application/x-protobuf' });
    expect(collector.requests[0]!.headers.authorization).toBe('Bearer collector-secret');
    const body = collector.protobuf[0]!;
    expect(body.includes('POST /notify/payment-result')).toBe(true);
    expect(body.includes('webhook-receiver')).toBe(true);
  });

  it('when the protocol is http/json, then the span leaves as OTLP JSON', async () => {
    await traceOneNotification({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'json-service' });
    expect(collector.requests).toHaveLength(1);
    expect(collector.spans).toEqual([
      expect.objectContaining({
        name: 'POST /notify/payment-result',
        service: 'json-service',
        attributes: expect.objectContaining({ 'webhook.event_type': 'payment.result' }),
      }),
    ]);
  });
});
