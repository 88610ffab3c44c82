import { createHash } from 'node:crypto';
import type { EventType } from '../../src/model/event-table';
import type { EventJob } from '../../src/model/jobs';

export interface VerifiedRequest {
  eventType: EventType;
  path: string;
  body: Buffer;
  timestamp: number;
  nonce: string;
  signatureHeaders: Record<string, string>;
  contentType?: string;
  receivedAtMs: number;
}

/**
 * The baselines' own event id, of the service's form (`evt_` and 40 hex digits of a SHA-256 over type
 * and body), computed here so the baselines do not depend on how the service derives its ids.
 */
export function benchEventId(eventType: string, body: Buffer): string {
  return `evt_${createHash('sha256').update(eventType).update('\n').update(body).digest('hex').slice(0, 40)}`;
}

/**
 * The baselines' own job, the shape the receiver stores, so the baselines write about the same bytes
 * to Redis as the service does. Bodies here are always UTF-8 JSON. The rest of the harness uses the
 * service's own builder (src/model/jobs.ts).
 */
export function buildEventJob(r: VerifiedRequest): EventJob {
  const rawBody = r.body.toString('utf8');
  return {
    eventId: benchEventId(r.eventType, r.body),
    eventType: r.eventType,
    receivedAt: new Date(r.receivedAtMs).toISOString(),
    path: r.path,
    timestamp: r.timestamp,
    nonce: r.nonce,
    scheme: 'current',
    rawBody,
    rawBodyEncoding: 'utf8',
    ...(r.contentType ? { contentType: r.contentType } : {}),
    signatureHeaders: r.signatureHeaders,
    payload: JSON.parse(rawBody) as EventJob['payload'],
    // An assertion, not a check: the job type may grow fields the harness does not need to fill.
  } as EventJob;
}
