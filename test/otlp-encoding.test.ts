import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace, type Context } from '@opentelemetry/api';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { SpanBatch } from '../src/tracing/otlp-batch';
import { CollectSpans } from './support/collect-spans';

function providerWith(collect: CollectSpans, schemaUrl?: string) {
  const resource = resourceFromAttributes(
    {
      'service.name': 'webhook-receiver-test',
      'deployment.environment.name': 'production',
      'process.pid': 4242,
      'host.arch': 'amd64',
    },
    { schemaUrl },
  );
  return new BasicTracerProvider({ resource, spanProcessors: [collect] });
}

const remoteParent = (flags = TraceFlags.SAMPLED): Context =>
  trace.setSpanContext(ROOT_CONTEXT, {
    traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
    spanId: '00f067aa0ba902b7',
    traceFlags: flags,
    isRemote: true,
  });

/** Spans with every part OTLP carries: links, events, errors, trace state, remote and local parents, each kind of value. */
function varietyOfSpans(schemaUrl?: string): ReadableSpan[] {
  const collect = new CollectSpans();
  const provider = providerWith(collect, schemaUrl);
  const tracer = provider.getTracer('webhook-receiver');
  const other = provider.getTracer('other-scope', '1.2.3', { schemaUrl: 'https://opentelemetry.io/schemas/1.30.0' });

  const server = tracer.startSpan('POST /notify/payment', {
    kind: SpanKind.SERVER,
    root: true,
    links: [
      {
        context: { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: 1, isRemote: true },
        attributes: { 'webhook.link': 'platform traceparent (unsigned)' },
      },
    ],
    attributes: { 'http.request.method': 'POST', 'webhook.event_type': 'payment.result' },
  });
  server.setAttributes({
    int: 42,
    negative: -7,
    big: 2 ** 60,
    nearMax: 2 ** 62,
    double: 0.25,
    bool: true,
    no: false,
    empty: '',
    unicode: 'Zahlung über 1.000 € — 支付 ✓',
    long: 'x'.repeat(300),
    longer: 'é'.repeat(9000),
    strings: ['a', 'b', 'ü'],
    numbers: [1, 2.5, -3],
    bools: [true, false],
  });
  const parent = trace.setSpan(ROOT_CONTEXT, server);
  const redis = tracer.startSpan(
    'redis ingest',
    { kind: SpanKind.CLIENT, attributes: { 'db.system.name': 'redis' } },
    parent,
  );
  redis.recordException(new Error('READONLY You can not write against a read only replica.'));
  redis.setStatus({ code: SpanStatusCode.ERROR, message: 'READONLY' });
  redis.end();
  server.addEvent('checked', { step: 2 });
  server.setStatus({ code: SpanStatusCode.OK });
  server.end();

  const attempt = tracer.startSpan(
    'deliver ledger',
    { kind: SpanKind.PRODUCER, attributes: { 'webhook.attempt': 3 } },
    remoteParent(),
  );
  attempt.end();
  const withState = trace.setSpanContext(ROOT_CONTEXT, {
    traceId: '0af7651916cd43dd8448eb211c80319c',
    spanId: 'b7ad6b7169203331',
    traceFlags: 1,
    isRemote: false,
    traceState: new (class {
      serialize = () => 'vendor=abc,other=x';
      get = () => undefined;
      set = () => this;
      unset = () => this;
    })(),
  });
  other.startSpan('internal work', {}, withState).end();
  const operator = other.startSpan('webhook replay', { kind: SpanKind.INTERNAL, root: true });
  for (let i = 0; i < 3; i++)
    operator.addLink({ context: { traceId: `${i}`.repeat(32), spanId: 'c'.repeat(16), traceFlags: 0 } });
  operator.end();
  other.startSpan('consumer', { kind: SpanKind.CONSUMER }).end();
  return collect.spans;
}

function batchOf(protocol: 'http/protobuf' | 'http/json', spans: ReadableSpan[]): SpanBatch {
  const batch = new SpanBatch(protocol);
  for (const span of spans) batch.add(span);
  return batch;
}

describe('OTLP encoding of ended spans, one at a time', () => {
  it("when spans of every shape are encoded as protobuf, then the request is byte for byte the OpenTelemetry serializer's", () => {
    const spans = varietyOfSpans();
    const ours = Buffer.from(batchOf('http/protobuf', spans).request());
    const theirs = Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!);
    expect(ours.length).toBeGreaterThan(18000);
    expect(ours.equals(theirs)).toBe(true);
  });

  it('when the resource names a schema, then it is encoded as the serializer does', () => {
    const spans = varietyOfSpans('https://opentelemetry.io/schemas/1.26.0');
    expect(
      Buffer.from(batchOf('http/protobuf', spans).request()).equals(
        Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!),
      ),
    ).toBe(true);
    expect(JSON.parse(Buffer.from(batchOf('http/json', spans).request()).toString())).toEqual(
      JSON.parse(Buffer.from(JsonTraceSerializer.serializeRequest(spans)!).toString()),
    );
  });

  it("when a batch holds a thousand spans, then it is still the serializer's request", () => {
    const spans = Array.from({ length: 200 }, () => varietyOfSpans()).flat();
    expect(spans.length).toBe(1200);
    expect(
      Buffer.from(batchOf('http/protobuf', spans).request()).equals(
        Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!),
      ),
    ).toBe(true);
  });

  it("when spans of every shape are encoded as JSON, then the request parses to the OpenTelemetry serializer's", () => {
    const spans = varietyOfSpans();
    const ours = JSON.parse(Buffer.from(batchOf('http/json', spans).request()).toString('utf8')) as {
      resourceSpans: { scopeSpans: { spans: unknown[] }[] }[];
    };
    const theirs = JSON.parse(Buffer.from(JsonTraceSerializer.serializeRequest(spans)!).toString('utf8')) as unknown;
    expect(ours.resourceSpans[0]!.scopeSpans.map((s) => s.spans.length)).toEqual([3, 3]);
    expect(ours).toEqual(theirs);
  });
});
