/**
 * Every span attribute the service sets, by name: OpenTelemetry's semantic conventions where they have
 * one (`http.*`, `db.*`, `error.type`), the service's own under `webhook.`. docs/tracing.md lists them.
 */
export const SpanAttribute = {
  HttpRequestMethod: 'http.request.method',
  HttpRoute: 'http.route',
  HttpResponseStatusCode: 'http.response.status_code',
  DbSystemName: 'db.system.name',
  DbOperationName: 'db.operation.name',
  ErrorType: 'error.type',
  EventType: 'webhook.event_type',
  EventId: 'webhook.event_id',
  Environment: 'webhook.environment',
  Outcome: 'webhook.outcome',
  Reason: 'webhook.reason',
  Target: 'webhook.target',
  Attempt: 'webhook.attempt',
  LatencyMs: 'webhook.latency_ms',
  Action: 'webhook.action',
  Operator: 'webhook.operator',
  Replayed: 'webhook.replayed',
  Link: 'webhook.link',
} as const;

export type SpanAttributeName = (typeof SpanAttribute)[keyof typeof SpanAttribute];
