import type { Attributes, HrTime, Link } from '@opentelemetry/api';
import type { ReadableSpan, TimedEvent } from '@opentelemetry/sdk-trace-base';
import { spanFlags } from './otlp-protobuf';

/**
 * OTLP/JSON of one ended span, the object `@opentelemetry/otlp-transformer`'s JsonTraceSerializer
 * builds for it (hex ids, decimal nanosecond strings), as text: a test holds the two to the same
 * parsed value. Kept as text from the span's end until its batch is sent.
 */
export function spanJson(span: ReadableSpan): string {
  const context = span.spanContext();
  return JSON.stringify({
    traceId: context.traceId,
    spanId: context.spanId,
    parentSpanId: span.parentSpanContext?.spanId || undefined,
    traceState: context.traceState?.serialize(),
    name: span.name,
    kind: span.kind + 1,
    startTimeUnixNano: nanos(span.startTime),
    endTimeUnixNano: nanos(span.endTime),
    attributes: keyValues(span.attributes),
    droppedAttributesCount: span.droppedAttributesCount,
    events: span.events.map(eventJson),
    droppedEventsCount: span.droppedEventsCount,
    status: { code: span.status.code, message: span.status.message },
    links: span.links.map(linkJson),
    droppedLinksCount: span.droppedLinksCount,
    flags: spanFlags(context.traceFlags, span.parentSpanContext?.isRemote),
  });
}

function eventJson(event: TimedEvent) {
  return {
    attributes: event.attributes ? keyValues(event.attributes) : [],
    name: event.name,
    timeUnixNano: nanos(event.time),
    droppedAttributesCount: event.droppedAttributesCount ?? 0,
  };
}

function linkJson(link: Link) {
  const context = link.context;
  return {
    attributes: link.attributes ? keyValues(link.attributes) : [],
    spanId: context.spanId,
    traceId: context.traceId,
    traceState: context.traceState?.serialize(),
    droppedAttributesCount: link.droppedAttributesCount ?? 0,
    flags: spanFlags(context.traceFlags, context.isRemote),
  };
}

export function keyValues(attributes: Attributes): { key: string; value: unknown }[] {
  return Object.keys(attributes).map((key) => ({ key, value: anyValue(attributes[key]) }));
}

function anyValue(value: unknown): unknown {
  if (typeof value === 'string') return { stringValue: value };
  if (typeof value === 'number') return Number.isInteger(value) ? { intValue: value } : { doubleValue: value };
  if (typeof value === 'boolean') return { boolValue: value };
  if (value instanceof Uint8Array) return { bytesValue: Buffer.from(value).toString('base64') };
  if (Array.isArray(value)) return { arrayValue: { values: (value as unknown[]).map(anyValue) } };
  if (typeof value === 'object' && value !== null) {
    return {
      kvlistValue: {
        values: Object.keys(value).map((key) => ({ key, value: anyValue((value as Record<string, unknown>)[key]) })),
      },
    };
  }
  return {};
}

/** [seconds, nanoseconds] as decimal nanoseconds: the seconds' digits, then the nanoseconds' nine. */
function nanos([seconds, nanoseconds]: HrTime): string {
  const s = Math.trunc(seconds);
  const n = Math.trunc(nanoseconds);
  return s === 0 ? String(n) : `${s}${String(n).padStart(9, '0')}`;
}
