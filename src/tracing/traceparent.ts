/**
 * W3C Trace Context `traceparent` values (version 00), read and written without the OpenTelemetry
 * SDK, so the event view, the CLI and a worker with tracing off can show a stored trace id.
 */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

export interface TraceParent {
  traceId: string;
  spanId: string;
  /** The trace flags; bit 0 is `sampled`. */
  flags: number;
}

/** The parts of a valid `traceparent`; undefined for anything else (all-zero ids are invalid). */
export function parseTraceparent(value: unknown): TraceParent | undefined {
  if (typeof value !== 'string' || value.length !== 55) return undefined;
  const m = TRACEPARENT.exec(value);
  if (!m || m[1] === ZERO_TRACE || m[2] === ZERO_SPAN) return undefined;
  return { traceId: m[1]!, spanId: m[2]!, flags: parseInt(m[3]!, 16) };
}

export function formatTraceparent(traceId: string, spanId: string, flags: number): string {
  return `00-${traceId}-${spanId}-${flags & 1 ? '01' : '00'}`;
}

/** The trace id a stored `traceparent` names, or undefined. */
export function traceIdOf(traceparent: unknown): string | undefined {
  return parseTraceparent(traceparent)?.traceId;
}
