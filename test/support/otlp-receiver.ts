import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One exported span as an OTLP/HTTP JSON request carries it, flattened. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean>;
  links: { traceId: string; spanId: string }[];
  status?: { code?: number; message?: string };
  service: string;
}

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
type KeyValue = { key: string; value: AnyValue };
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: KeyValue[];
  links?: { traceId: string; spanId: string }[];
  status?: { code?: number; message?: string };
}
interface ExportRequest {
  resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[];
}

function valueOf(v: AnyValue): string | number | boolean {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.boolValue !== undefined) return v.boolValue;
  return v.doubleValue ?? '';
}

function attributesOf(list: KeyValue[] | undefined): Record<string, string | number | boolean> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, valueOf(kv.value)]));
}

/**
 * A local OTLP/HTTP trace receiver speaking the JSON protocol (`OTEL_EXPORTER_OTLP_PROTOCOL=http/json`),
 * as a collector would: it takes POST /v1/traces, answers 200 with an empty partial success, and keeps
 * every span. A protobuf export (the default protocol) is kept as its bytes in `protobuf`; any other body
 * that is not an OTLP JSON export is answered 400 and kept in `refused`.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  readonly refused: string[] = [];
  readonly protobuf: Buffer[] = [];
  readonly requests: { path: string; contentType?: string; headers: Record<string, string | string[] | undefined> }[] =
    [];
  private constructor(private readonly server: Server) {}

  static async start(): Promise<OtlpReceiver> {
    let receiver: OtlpReceiver | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => receiver!.take(req.url ?? '', req.headers, Buffer.concat(chunks), res));
    });
    receiver = new OtlpReceiver(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    return receiver;
  }

  /** The base endpoint, as OTEL_EXPORTER_OTLP_ENDPOINT takes it (the exporter adds /v1/traces). */
  get endpoint(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private take(
    path: string,
    headers: Record<string, string | string[] | undefined>,
    bytes: Buffer,
    res: ServerResponse,
  ): void {
    this.requests.push({ path, contentType: headers['content-type'] as string | undefined, headers });
    if (path === '/v1/traces' && headers['content-type'] === 'application/x-protobuf') {
      this.protobuf.push(bytes);
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      return;
    }
    const body = bytes.toString('utf8');
    let parsed: ExportRequest;
    try {
      parsed = JSON.parse(body) as ExportRequest;
      if (path !== '/v1/traces' || !Array.isArray(parsed.resourceSpans)) throw new Error('not an OTLP trace export');
    } catch {
      this.refused.push(body.slice(0, 200));
      res.writeHead(400).end();
      return;
    }
    for (const rs of parsed.resourceSpans ?? []) {
      const service = String(attributesOf(rs.resource?.attributes)['service.name'] ?? '');
      for (const ss of rs.scopeSpans ?? []) {
        for (const s of ss.spans ?? []) {
          this.spans.push({
            traceId: s.traceId,
            spanId: s.spanId,
            parentSpanId: s.parentSpanId ?? '',
            name: s.name,
            kind: s.kind,
            attributes: attributesOf(s.attributes),
            links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
            status: s.status,
            service,
          });
        }
      }
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  }

  async waitFor(predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs = 15000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this.spans)) {
      if (Date.now() > deadline)
        throw new Error(
          `OTLP receiver: condition not met within ${timeoutMs} ms (${this.spans.length} spans: ${this.spans.map((s) => s.name).join(', ')})`,
        );
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
