import type { Attributes, HrTime, Link, SpanContext } from '@opentelemetry/api';
import type { ReadableSpan, TimedEvent } from '@opentelemetry/sdk-trace-base';
import type { ProtoWriter } from './proto-writer';

/**
 * OTLP/protobuf (opentelemetry/proto/trace/v1/trace.proto) written straight from the SDK's ended
 * spans. Field for field, and in the same order, as `@opentelemetry/otlp-transformer`'s
 * ProtobufTraceSerializer (a test holds the two to the same bytes), but one span at a time, so a
 * span is bytes as soon as it ends and nothing of it waits in memory for its batch.
 */

const LENGTH = 2;
const VARINT = 0;
const FIXED64 = 1;
const FIXED32 = 5;

/** OTLP's span flags: the W3C trace flags, and whether the parent (or a link) is remote. */
const HAS_IS_REMOTE = 0x100;
const IS_REMOTE = 0x200;

export function spanFlags(traceFlags: number, isRemote: boolean | undefined): number {
  return (traceFlags & 0xff) | HAS_IS_REMOTE | (isRemote ? IS_REMOTE : 0);
}

/** One span as a `spans` entry (field 2) of ScopeSpans: tag, length and message. */
export function writeSpanEntry(w: ProtoWriter, span: ReadableSpan): void {
  w.tag(2, LENGTH);
  const start = w.open();
  const context = span.spanContext();
  writeIds(w, context);
  const parent = span.parentSpanContext;
  if (parent?.spanId) {
    w.tag(4, LENGTH);
    w.hex(parent.spanId);
  }
  w.tag(5, LENGTH);
  w.string(span.name);
  // OTLP's kinds are the API's plus one (0 is "unspecified").
  w.tag(6, VARINT);
  w.varint(span.kind + 1);
  w.tag(7, FIXED64);
  writeTime(w, span.startTime);
  w.tag(8, FIXED64);
  writeTime(w, span.endTime);
  writeAttributes(w, 9, span.attributes);
  w.tag(10, VARINT);
  w.varint(span.droppedAttributesCount);
  for (const event of span.events) writeEvent(w, event);
  w.tag(12, VARINT);
  w.varint(span.droppedEventsCount);
  for (const link of span.links) writeLink(w, link);
  w.tag(14, VARINT);
  w.varint(span.droppedLinksCount);
  w.tag(15, LENGTH);
  const status = w.open();
  if (span.status.message) {
    w.tag(2, LENGTH);
    w.string(span.status.message);
  }
  w.tag(3, VARINT);
  w.varint(span.status.code);
  w.close(status);
  w.tag(16, FIXED32);
  w.fixed32(spanFlags(context.traceFlags, parent?.isRemote));
  w.close(start);
}

/** Fields 1 to 3 of a span and of a link alike: trace id, span id and trace state (when there is one). */
function writeIds(w: ProtoWriter, context: SpanContext): void {
  w.tag(1, LENGTH);
  w.hex(context.traceId);
  w.tag(2, LENGTH);
  w.hex(context.spanId);
  const traceState = context.traceState?.serialize();
  if (traceState) {
    w.tag(3, LENGTH);
    w.string(traceState);
  }
}

function writeEvent(w: ProtoWriter, event: TimedEvent): void {
  w.tag(11, LENGTH);
  const start = w.open();
  w.tag(1, FIXED64);
  writeTime(w, event.time);
  w.tag(2, LENGTH);
  w.string(event.name);
  if (event.attributes) writeAttributes(w, 3, event.attributes);
  w.tag(4, VARINT);
  w.varint(event.droppedAttributesCount ?? 0);
  w.close(start);
}

function writeLink(w: ProtoWriter, link: Link): void {
  w.tag(13, LENGTH);
  const start = w.open();
  const context = link.context;
  writeIds(w, context);
  if (link.attributes) writeAttributes(w, 4, link.attributes);
  w.tag(5, VARINT);
  w.varint(link.droppedAttributesCount ?? 0);
  w.tag(6, FIXED32);
  w.fixed32(spanFlags(context.traceFlags, context.isRemote));
  w.close(start);
}

/** Each attribute as a KeyValue in `field`. */
export function writeAttributes(w: ProtoWriter, field: number, attributes: Attributes): void {
  for (const key in attributes) {
    if (!Object.prototype.hasOwnProperty.call(attributes, key)) continue;
    w.tag(field, LENGTH);
    writeKeyValue(w, key, attributes[key]);
  }
}

function writeKeyValue(w: ProtoWriter, key: string, value: unknown): void {
  const start = w.open();
  w.tag(1, LENGTH);
  w.string(key);
  w.tag(2, LENGTH);
  const any = w.open();
  writeAnyValue(w, value);
  w.close(any);
  w.close(start);
}

const MIN_INT64 = -(2 ** 63);
const MAX_INT64_EXCLUSIVE = 2 ** 63;

/** An AnyValue's content: integers in the int64 range as int_value, other numbers as double_value. */
function writeAnyValue(w: ProtoWriter, value: unknown): void {
  if (typeof value === 'string') {
    w.tag(1, LENGTH);
    w.string(value);
  } else if (typeof value === 'boolean') {
    w.tag(2, VARINT);
    w.varint(value ? 1 : 0);
  } else if (typeof value === 'number') {
    if (Number.isInteger(value) && value >= MIN_INT64 && value < MAX_INT64_EXCLUSIVE) {
      w.tag(3, VARINT);
      w.varint(value);
    } else {
      w.tag(4, FIXED64);
      w.double(value);
    }
  } else if (value instanceof Uint8Array) {
    w.tag(7, LENGTH);
    w.bytes(value);
  } else if (Array.isArray(value)) {
    w.tag(5, LENGTH);
    const array = w.open();
    for (const item of value as unknown[]) {
      w.tag(1, LENGTH);
      const entry = w.open();
      writeAnyValue(w, item);
      w.close(entry);
    }
    w.close(array);
  } else if (typeof value === 'object' && value !== null) {
    w.tag(6, LENGTH);
    const list = w.open();
    for (const key in value) {
      if (!Object.prototype.hasOwnProperty.call(value, key)) continue;
      w.tag(1, LENGTH);
      writeKeyValue(w, key, (value as Record<string, unknown>)[key]);
    }
    w.close(list);
  }
}

/**
 * [seconds, nanoseconds] as fixed64 nanoseconds since the epoch. `seconds * 1e9` passes 2^53, so the
 * seconds are split in 16-bit halves whose products stay exact, and the halves recombined with carry.
 */
export function writeTime(w: ProtoWriter, [seconds, nanos]: HrTime): void {
  const lowPart = (seconds & 0xffff) * 1e9;
  const highPart = ((seconds / 0x10000) >>> 0) * 1e9;
  const low = (lowPart >>> 0) + (((highPart & 0xffff) * 0x10000) >>> 0) + nanos;
  const high = Math.floor(lowPart / 0x100000000) + ((highPart / 0x10000) >>> 0) + Math.floor(low / 0x100000000);
  w.fixed64(low >>> 0, high >>> 0);
}
