import type { IncomingHttpHeaders } from 'node:http';
import { EVENT_TABLE } from '../model/event-table';
import { requestIdsOf } from '../pipeline/request-index';

export interface EventSummary {
  id: string;
  /** The event type; absent when the body does not say (a transformed body, or not JSON: `shape` says which). */
  type?: string;
  shape?: 'transformed' | 'not JSON';
  status?: string;
  requestId?: string;
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** The platform's `status`, at the top of its body or in its `data`. */
function statusOf(platformBody: Record<string, unknown> | undefined): string | undefined {
  const status = platformBody?.status ?? record(platformBody?.data)?.status;
  return typeof status === 'string' || typeof status === 'number' ? String(status) : undefined;
}

/** The event type of a passthrough request, from the notify path the platform signed. */
function typeFromForwardedUri(uri: string | undefined): string | undefined {
  const path = uri?.split('?', 1)[0];
  return path ? EVENT_TABLE.find((e) => path.endsWith(e.path))?.type : undefined;
}

/**
 * What one line about a forwarded event shows. A `standard` request is `{id, type, timestamp, data}`
 * with the platform's body in `data`; a `passthrough` request is the platform's body itself, its type
 * known from `x-forwarded-uri`.
 */
export function summarise(body: Buffer, headers: IncomingHttpHeaders): EventSummary {
  const id = String(headers['webhook-id'] ?? '');
  let parsed: Record<string, unknown> | undefined;
  try {
    parsed = record(JSON.parse(body.toString('utf8')));
  } catch {
    return { id, shape: 'not JSON' };
  }
  const standard = parsed !== undefined && parsed.id === id && typeof parsed.type === 'string' && 'data' in parsed;
  const platformBody = standard ? record(parsed!.data) : parsed;
  const forwardedUri = headers['x-forwarded-uri'];
  // Neither the standard envelope nor the platform's body passed through: a target's transform made it.
  if (!standard && forwardedUri === undefined) return { id, shape: 'transformed', requestId: requestIdsOf(parsed)[0] };
  return {
    id,
    type: standard
      ? String(parsed!.type)
      : typeFromForwardedUri(typeof forwardedUri === 'string' ? forwardedUri : undefined),
    status: statusOf(platformBody),
    requestId: requestIdsOf(platformBody)[0],
  };
}

export function formatSummary(at: Date, s: EventSummary): string {
  const fields = [
    s.status !== undefined ? `status=${s.status}` : '',
    s.requestId !== undefined ? `request_id=${s.requestId}` : '',
  ].filter(Boolean);
  const type =
    s.type ??
    (s.shape === 'transformed' ? '(transformed body)' : s.shape === 'not JSON' ? '(not JSON)' : '(unknown type)');
  return [at.toISOString(), type.padEnd(26), s.id, ...fields].join('  ');
}
