import { execFile } from 'node:child_process';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { ROOT_CONTEXT, TraceFlags, trace } from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { EncodingSpanProcessor, type BatchExporter } from '../src/tracing/encoding-span-processor';
import type { BatchSettings } from '../src/tracing/settings';
import { CollectSpans } from './support/collect-spans';

/** A local OTLP/HTTP collector: keeps each request's body and headers, and answers as told. */
class Collector {
  readonly requests: { body: Buffer; headers: IncomingMessage['headers'] }[] = [];
  answer: (res: ServerResponse) => void = (res) =>
    res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
  private constructor(private readonly server: Server) {}

  static async start(): Promise<Collector> {
    const collector: Collector = new Collector(
      createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          collector.requests.push({ body: Buffer.concat(chunks), headers: req.headers });
          collector.answer(res);
        });
      }),
    );
    await new Promise<void>((r) => collector.server.listen(0, '127.0.0.1', () => r()));
    return collector;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1/traces`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

const SETTINGS: BatchSettings = {
  maxQueueSize: 2048,
  maxExportBatchSize: 10,
  scheduledDelayMillis: 300,
  exportTimeoutMillis: 5000,
};
let collector: Collector;
const reports: string[] = [];

beforeEach(async () => {
  collector = await Collector.start();
  reports.length = 0;
});
afterEach(() => collector.close());

/**
 * Posts each batch to the collector. The OpenTelemetry exporter loads its HTTP transport by a dynamic
 * import, which Jest's module sandbox refuses; its own test below runs it in a child process.
 */
function postingExporter(url: string): BatchExporter {
  return {
    export(batch, done) {
      const req = request(url, { method: 'POST', headers: { 'content-type': 'application/x-protobuf' } }, (res) => {
        res.resume();
        res.on('end', () =>
          done(
            res.statusCode === 200
              ? { code: ExportResultCode.SUCCESS }
              : { code: ExportResultCode.FAILED, error: new Error(`HTTP ${res.statusCode}`) },
          ),
        );
      });
      req.on('error', (error) => done({ code: ExportResultCode.FAILED, error }));
      req.end(Buffer.from(batch.request()));
    },
    shutdown: () => Promise.resolve(),
  };
}

function setUp(settings: Partial<BatchSettings> = {}) {
  const processor = new EncodingSpanProcessor(
    'http/protobuf',
    postingExporter(collector.url),
    { ...SETTINGS, ...settings },
    (m) => reports.push(m),
  );
  const keep = new CollectSpans();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'batch-test' }),
    spanProcessors: [keep, processor],
  });
  const tracer = provider.getTracer('batch-test');
  const end = (n: number) => {
    for (let i = 0; i < n; i++) tracer.startSpan(`span ${i}`, { attributes: { i } }).end();
  };
  return { processor, keep, provider, tracer, end };
}

const until = async (check: () => boolean, ms = 5000) => {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  expect(check()).toBe(true);
};

describe('the encoding span processor, against a local OTLP/HTTP collector', () => {
  it("when batches fill, then each leaves at once as the serializer's bytes, and the rest after the delay", async () => {
    const { keep, provider, end } = setUp();
    const started = Date.now();
    end(25);
    await until(() => collector.requests.length === 2);
    expect(Date.now() - started).toBeLessThan(SETTINGS.scheduledDelayMillis);
    await until(() => collector.requests.length === 3);
    expect(Date.now() - started).toBeGreaterThanOrEqual(SETTINGS.scheduledDelayMillis - 5);
    const batches = [keep.spans.slice(0, 10), keep.spans.slice(10, 20), keep.spans.slice(20)];
    collector.requests.forEach((req, i) => {
      expect(req.headers['content-type']).toBe('application/x-protobuf');
      expect(req.body.equals(Buffer.from(ProtobufTraceSerializer.serializeRequest(batches[i]!)!))).toBe(true);
    });
    expect(reports).toEqual([]);
    await provider.shutdown();
  });

  it('when spans are not sampled, then none is sent', async () => {
    const { provider, tracer } = setUp();
    const unsampled = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: 'a'.repeat(32),
      spanId: 'b'.repeat(16),
      traceFlags: TraceFlags.NONE,
    });
    for (let i = 0; i < 12; i++) tracer.startSpan('child of an unsampled parent', {}, unsampled).end();
    await provider.forceFlush();
    expect(collector.requests).toHaveLength(0);
    await provider.shutdown();
  });

  it('when the service stops, then what waits is sent, and spans after the stop are not', async () => {
    const { keep, provider, end } = setUp({ maxExportBatchSize: 100, scheduledDelayMillis: 60_000 });
    end(7);
    await provider.shutdown();
    expect(collector.requests).toHaveLength(1);
    expect(collector.requests[0]!.body.equals(Buffer.from(ProtobufTraceSerializer.serializeRequest(keep.spans)!))).toBe(
      true,
    );
    end(3);
    await new Promise((r) => setTimeout(r, 50));
    expect(collector.requests).toHaveLength(1);
  });

  it('when the collector refuses an export, then the failure is reported and the next batch still goes', async () => {
    collector.answer = (res) => res.writeHead(400).end();
    const { provider, end } = setUp();
    end(10);
    await until(() => reports.length === 1);
    expect(reports[0]).toBe('an export of 10 spans failed: HTTP 400');
    collector.answer = (res) => res.writeHead(200).end();
    end(10);
    await until(() => collector.requests.length === 2);
    await provider.shutdown();
    expect(reports).toHaveLength(1);
  });

  it('when the collector does not answer and the queue fills, then spans are dropped, said once, and counted once it drains', async () => {
    const held: ServerResponse[] = [];
    collector.answer = (res) => held.push(res);
    const { provider, end } = setUp({ maxQueueSize: 30, exportTimeoutMillis: 400 });
    end(10); // sent, and never answered
    await until(() => collector.requests.length === 1);
    end(45); // 30 wait, 15 are dropped
    expect(reports).toEqual(['dropping spans: the export queue (OTEL_BSP_MAX_QUEUE_SIZE 30) is full']);
    await until(() =>
      reports.some((r) =>
        r.startsWith('an export of 10 spans failed: no answer within OTEL_BSP_EXPORT_TIMEOUT (400 ms)'),
      ),
    );
    await until(() => collector.requests.length === 2);
    end(1);
    expect(reports).toContain('dropped 15 spans: the export queue (OTEL_BSP_MAX_QUEUE_SIZE 30) was full');
    collector.answer = (res) => res.writeHead(200).end();
    for (const res of held) res.writeHead(200).end();
    await provider.shutdown();
  });

  it("when the service sends through the OpenTelemetry OTLP/HTTP exporter, then the collector gets the serializer's bytes and the headers of OTEL_EXPORTER_OTLP_HEADERS", async () => {
    const script = [
      "const { BasicTracerProvider } = require('@opentelemetry/sdk-trace-base');",
      "const { ProtobufTraceSerializer } = require('@opentelemetry/otlp-transformer');",
      "const { createBatchExporter } = require('./src/tracing/batch-exporter');",
      "const { EncodingSpanProcessor } = require('./src/tracing/encoding-span-processor');",
      'const spans = [];',
      'const keep = { onStart() {}, onEnd: (s) => spans.push(s), forceFlush: async () => {}, shutdown: async () => {} };',
      `const processor = new EncodingSpanProcessor('http/protobuf', createBatchExporter(process.env.URL, 'http/protobuf'), ${JSON.stringify({ ...SETTINGS, maxExportBatchSize: 512 })}, (m) => process.stderr.write(m));`,
      'const provider = new BasicTracerProvider({ spanProcessors: [keep, processor] });',
      "for (let i = 0; i < 40; i++) provider.getTracer('child').startSpan('span ' + i, { attributes: { i } }).end();",
      "provider.shutdown().then(() => process.stdout.write(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)).toString('base64')));",
    ].join('\n');
    const env = {
      ...process.env,
      TS_NODE_SWC: 'true',
      URL: collector.url,
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer collector-secret',
    };
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['-r', 'ts-node/register', '-e', script], {
      cwd: path.resolve(__dirname, '..'),
      env,
    });
    expect(stderr).toBe('');
    expect(collector.requests).toHaveLength(1);
    const sent = collector.requests[0]!;
    expect(sent.headers.authorization).toBe('Bearer collector-secret');
    expect(sent.headers['content-type']).toBe('application/x-protobuf');
    expect(sent.body.toString('base64')).toBe(stdout);
  });
});
