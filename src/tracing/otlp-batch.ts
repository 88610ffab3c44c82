import type { InstrumentationScope } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { keyValues, spanJson } from './otlp-json';
import { writeAttributes, writeSpanEntry } from './otlp-protobuf';
import { ProtoWriter } from './proto-writer';
import type { OtlpProtocol } from './settings';

/** The scope as the SDK may hand it: newer scopes carry attributes of their own. */
type Scope = InstrumentationScope & { attributes?: Record<string, unknown>; droppedAttributesCount?: number };

/** The encoded spans of one resource and instrumentation scope. */
interface ScopeGroup {
  scope: Scope;
  proto?: ProtoWriter;
  json?: string[];
}

/**
 * One batch of ended spans, each encoded as it is added: what waits to be sent is bytes (protobuf)
 * or text (JSON), grouped by resource and scope as OTLP nests them, never the span objects.
 */
export class SpanBatch {
  readonly groups = new Map<Resource, Map<Scope, ScopeGroup>>();
  count = 0;

  constructor(readonly protocol: OtlpProtocol) {}

  add(span: ReadableSpan): void {
    let scopes = this.groups.get(span.resource);
    if (scopes === undefined) {
      scopes = new Map();
      this.groups.set(span.resource, scopes);
    }
    let group = scopes.get(span.instrumentationScope);
    if (group === undefined) {
      group =
        this.protocol === 'http/json'
          ? { scope: span.instrumentationScope, json: [] }
          : { scope: span.instrumentationScope, proto: new ProtoWriter() };
      scopes.set(span.instrumentationScope, group);
    }
    if (group.proto) writeSpanEntry(group.proto, span);
    else group.json!.push(spanJson(span));
    this.count++;
  }

  /** The batch as one ExportTraceServiceRequest. */
  request(): Uint8Array {
    return this.protocol === 'http/json' ? Buffer.from(this.json(), 'utf8') : this.protobuf();
  }

  private protobuf(): Uint8Array {
    let bytes = 1024;
    for (const scopes of this.groups.values()) for (const group of scopes.values()) bytes += group.proto!.length;
    const w = new ProtoWriter(bytes);
    for (const [resource, scopes] of this.groups) {
      w.tag(1, 2);
      const resourceSpans = w.open();
      w.tag(1, 2);
      const resourceStart = w.open();
      writeAttributes(w, 1, resource.attributes);
      w.tag(2, 0);
      w.varint(0);
      w.close(resourceStart);
      for (const { scope, proto } of scopes.values()) {
        w.tag(2, 2);
        const scopeSpans = w.open();
        writeScope(w, scope);
        proto!.copyTo(w);
        if (scope.schemaUrl) {
          w.tag(3, 2);
          w.string(scope.schemaUrl);
        }
        w.close(scopeSpans);
      }
      if (resource.schemaUrl) {
        w.tag(3, 2);
        w.string(resource.schemaUrl);
      }
      w.close(resourceSpans);
    }
    return w.take();
  }

  private json(): string {
    const resourceSpans: string[] = [];
    for (const [resource, scopes] of this.groups) {
      const scopeSpans: string[] = [];
      for (const { scope, json } of scopes.values()) {
        const head = JSON.stringify({
          name: scope.name,
          version: scope.version,
          ...(scope.attributes && Object.keys(scope.attributes).length > 0
            ? {
                attributes: keyValues(scope.attributes as never),
                droppedAttributesCount: scope.droppedAttributesCount ?? 0,
              }
            : {}),
        });
        const schemaUrl = scope.schemaUrl === undefined ? '' : `,"schemaUrl":${JSON.stringify(scope.schemaUrl)}`;
        scopeSpans.push(`{"scope":${head},"spans":[${json!.join(',')}]${schemaUrl}}`);
      }
      const head = JSON.stringify({
        attributes: keyValues(resource.attributes),
        droppedAttributesCount: 0,
        ...(resource.schemaUrl ? { schemaUrl: resource.schemaUrl } : {}),
      });
      const schemaUrl = resource.schemaUrl ? `,"schemaUrl":${JSON.stringify(resource.schemaUrl)}` : '';
      resourceSpans.push(`{"resource":${head},"scopeSpans":[${scopeSpans.join(',')}]${schemaUrl}}`);
    }
    return `{"resourceSpans":[${resourceSpans.join(',')}]}`;
  }
}

function writeScope(w: ProtoWriter, scope: Scope): void {
  w.tag(1, 2);
  const start = w.open();
  w.tag(1, 2);
  w.string(scope.name);
  if (scope.version) {
    w.tag(2, 2);
    w.string(scope.version);
  }
  if (scope.attributes) writeAttributes(w, 3, scope.attributes as never);
  if (scope.droppedAttributesCount) {
    w.tag(4, 0);
    w.varint(scope.droppedAttributesCount);
  }
  w.close(start);
}
