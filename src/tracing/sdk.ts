import type * as Api from '@opentelemetry/api';
import { SpanAttribute } from './attributes';
import { formatTraceparent, parseTraceparent } from './traceparent';
import type {
  AttemptFailure,
  AttemptSpan,
  AttemptStart,
  EndableSpan,
  LogIds,
  NotifySpan,
  OperatorSpan,
  Tracing,
} from './tracing';

type OtelApi = typeof Api;

/**
 * The hooks of tracing.ts on the OpenTelemetry API; loaded only by start.ts. Contexts are passed
 * explicitly (no context manager, no AsyncLocalStorage): the notify request's span is the parent of
 * its Redis call, and a delivery attempt's parent is the `traceparent` stored with its job, so an
 * attempt hours later, in another process, joins the same trace.
 */
export function createSdkTracing(api: OtelApi, tracer: Api.Tracer): Tracing {
  const { SpanKind, SpanStatusCode, ROOT_CONTEXT, trace } = api;

  function remote(traceparent: string | undefined): Api.SpanContext | undefined {
    const parsed = parseTraceparent(traceparent);
    return parsed && { traceId: parsed.traceId, spanId: parsed.spanId, traceFlags: parsed.flags, isRemote: true };
  }

  function logIdsOf(context: Api.SpanContext): LogIds {
    return { trace_id: context.traceId, span_id: context.spanId };
  }

  function failWith(span: Api.Span, error: unknown): void {
    if (error === undefined) return;
    const err = error instanceof Error ? error : new Error(String(error));
    span.recordException(err);
    span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
  }

  function notify(eventType: string, route: string, platformTraceparent: string | string[] | undefined): NotifySpan {
    const platform = remote(typeof platformTraceparent === 'string' ? platformTraceparent : undefined);
    // The root context: a new trace. The platform's traceparent is unsigned, so anyone could name
    // any trace with it: a link at most, never the parent.
    const span = tracer.startSpan(
      `POST ${route}`,
      {
        kind: SpanKind.SERVER,
        links: platform
          ? [{ context: platform, attributes: { [SpanAttribute.Link]: 'platform traceparent (unsigned)' } }]
          : undefined,
        attributes: {
          [SpanAttribute.HttpRequestMethod]: 'POST',
          [SpanAttribute.HttpRoute]: route,
          [SpanAttribute.EventType]: eventType,
        },
      },
      ROOT_CONTEXT,
    );
    const context = span.spanContext();
    const parent = trace.setSpan(ROOT_CONTEXT, span);
    return {
      traceId: context.traceId,
      traceparent: formatTraceparent(context.traceId, context.spanId, context.traceFlags),
      logIds: logIdsOf(context),
      verified(eventId, environment) {
        span.setAttribute(SpanAttribute.EventId, eventId);
        span.setAttribute(SpanAttribute.Environment, environment);
      },
      outcome(outcome, reason) {
        span.setAttribute(SpanAttribute.Outcome, outcome);
        if (reason !== undefined) span.setAttribute(SpanAttribute.Reason, reason);
      },
      redis(operation): EndableSpan {
        const child = tracer.startSpan(
          `redis ${operation}`,
          {
            kind: SpanKind.CLIENT,
            attributes: { [SpanAttribute.DbSystemName]: 'redis', [SpanAttribute.DbOperationName]: operation },
          },
          parent,
        );
        return {
          end(error) {
            failWith(child, error);
            child.end();
          },
        };
      },
      end(status) {
        span.setAttribute(SpanAttribute.HttpResponseStatusCode, status);
        if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      },
    };
  }

  function attempt(start: AttemptStart): AttemptSpan {
    const stored = remote(start.trace);
    const parent = stored ? trace.setSpanContext(ROOT_CONTEXT, stored) : ROOT_CONTEXT;
    const span = tracer.startSpan(
      `deliver ${start.target}`,
      {
        kind: start.transport === undefined || start.transport === 'http' ? SpanKind.CLIENT : SpanKind.PRODUCER,
        attributes: {
          [SpanAttribute.Target]: start.target,
          [SpanAttribute.Attempt]: start.attempt,
          [SpanAttribute.EventId]: start.eventId,
          [SpanAttribute.EventType]: start.eventType,
        },
      },
      parent,
    );
    const context = span.spanContext();
    return {
      traceId: context.traceId,
      logIds: logIdsOf(context),
      inject(headers) {
        headers.traceparent = formatTraceparent(context.traceId, context.spanId, context.traceFlags);
        const state = context.traceState?.serialize();
        if (state) headers.tracestate = state;
      },
      delivered(status, latencyMs) {
        span.setAttributes({ [SpanAttribute.LatencyMs]: latencyMs, [SpanAttribute.Outcome]: 'delivered' });
        if (status !== undefined) span.setAttribute(SpanAttribute.HttpResponseStatusCode, status);
        span.end();
      },
      dropped(latencyMs) {
        span.setAttributes({ [SpanAttribute.LatencyMs]: latencyMs, [SpanAttribute.Outcome]: 'dropped' });
        span.end();
      },
      failed(failure: AttemptFailure) {
        if (failure.status !== undefined) span.setAttribute(SpanAttribute.HttpResponseStatusCode, failure.status);
        if (failure.latencyMs !== undefined) span.setAttribute(SpanAttribute.LatencyMs, failure.latencyMs);
        span.setAttributes({
          [SpanAttribute.ErrorType]: failure.errorClass ?? 'unexpected',
          [SpanAttribute.Outcome]: failure.final ? 'dead_lettered' : 'retry',
        });
        span.setStatus({ code: SpanStatusCode.ERROR, message: failure.error });
        span.end();
      },
    };
  }

  function operator(action: 'resend' | 'replay', by: string): OperatorSpan {
    const span = tracer.startSpan(
      `webhook ${action}`,
      { kind: SpanKind.INTERNAL, attributes: { [SpanAttribute.Action]: action, [SpanAttribute.Operator]: by } },
      ROOT_CONTEXT,
    );
    const linked = new Set<string>();
    return {
      link(traceparent) {
        const context = remote(traceparent);
        if (!context || linked.has(context.traceId)) return;
        linked.add(context.traceId);
        span.addLink({ context, attributes: { [SpanAttribute.Link]: 'received in' } });
      },
      attribute(name, value) {
        span.setAttribute(name, value);
      },
      end(error) {
        failWith(span, error);
        span.end();
      },
    };
  }

  return { on: true, notify, attempt, operator };
}
