import type { SpanAttributeName } from './attributes';

/**
 * The tracing hooks the notify path, the delivery worker and the operator actions call. Until
 * `startTracing` (start.ts) installs the OpenTelemetry SDK they are constant no-ops: every hook returns
 * undefined, so a caller's `span?.…` does nothing and nothing is allocated per request or per job. No
 * OpenTelemetry package is loaded unless tracing is configured.
 */

/** What a log line about the traced work carries, so logs and traces can be joined. */
export interface LogIds {
  trace_id: string;
  span_id: string;
}

/** A span that is ended once. */
export interface EndableSpan {
  end(error?: unknown): void;
}

/** The server span of one notify request. */
export interface NotifySpan {
  readonly traceId: string;
  /** The W3C `traceparent` of this span: stored with the delivery jobs, so every attempt joins this trace. */
  readonly traceparent: string;
  readonly logIds: LogIds;
  /** The notification as verified: its event id and platform environment. */
  verified(eventId: string, environment: string): void;
  /** How it ended: the outcome, and the rejection or quarantine reason when there is one. */
  outcome(outcome: string, reason?: string): void;
  /** A child span for the Redis call that stores it. */
  redis(operation: string): EndableSpan;
  /** Ends the span with the status the request was answered. */
  end(status: number): void;
}

/** The facts of a failed attempt, as the delivery worker classifies them. */
export interface AttemptFailure {
  errorClass?: string;
  status?: number;
  latencyMs?: number;
  error: string;
  /** The last attempt (or a permanent failure): the delivery is dead-lettered. */
  final: boolean;
}

/** The span of one delivery attempt. */
export interface AttemptSpan {
  readonly traceId: string;
  readonly logIds: LogIds;
  /** Sets `traceparent` (and `tracestate`, when there is one) of this attempt on the outgoing message. */
  inject(headers: Record<string, string>): void;
  /** `status` is the target's HTTP status; a broker destination answers none. */
  delivered(status: number | undefined, latencyMs: number): void;
  /** The target's transform returned null: nothing was sent. */
  dropped(latencyMs: number): void;
  failed(failure: AttemptFailure): void;
}

/** What starts an attempt span. */
export interface AttemptStart {
  /**
   * The `traceparent` stored with the delivery job (absent: the job was written with tracing off, so the attempt starts
   * a trace).
   */
  trace: string | undefined;
  target: string;
  /** `http` or a broker's kind. */
  transport?: string;
  eventId: string;
  eventType: string;
  attempt: number;
}

/** The span of an operator action (resend, dead-letter replay), linked to each original trace. */
export interface OperatorSpan {
  /** Links the trace a delivery was received in (its stored `traceparent`). */
  link(traceparent: string | undefined): void;
  attribute(name: SpanAttributeName, value: string | number): void;
  end(error?: unknown): void;
}

export interface Tracing {
  /** True once the SDK is started. */
  readonly on: boolean;
  /**
   * The server span of a notify request. The platform's `traceparent` (unsigned, so anyone could
   * forge it) is recorded as a link, never used as the parent: every notification starts its own trace.
   */
  notify(eventType: string, route: string, platformTraceparent: string | string[] | undefined): NotifySpan | undefined;
  attempt(start: AttemptStart): AttemptSpan | undefined;
  operator(action: 'resend' | 'replay', by: string): OperatorSpan | undefined;
}

const off: Tracing = {
  on: false,
  notify: () => undefined,
  attempt: () => undefined,
  operator: () => undefined,
};

/** The process's hooks: no-ops until the SDK is started, then replaced in place (callers keep this object). */
export const tracing: Tracing = { ...off };

/** Runs an operator action inside its span (when tracing is on), the span ended with the action's outcome. */
export async function asOperator<T>(
  action: 'resend' | 'replay',
  by: string,
  work: (span: OperatorSpan | undefined) => Promise<T>,
): Promise<T> {
  const span = tracing.operator(action, by);
  try {
    const result = await work(span);
    span?.end();
    return result;
  } catch (err) {
    span?.end(err);
    throw err;
  }
}

/** Installs an implementation (start.ts), or the no-ops again. */
export function installTracing(impl: Tracing | undefined): void {
  Object.assign(tracing, impl ?? off);
}
