import { isUtf8 } from 'node:buffer';
import type { EventDefinition } from '../events/table';
import type { Logger } from '../logging/logger';
import type { EventTypeSeries, Metrics, NotificationOutcome } from '../monitoring/metrics';
import { EnqueueUnavailableError } from '../pipeline/errors';
import { eventIdFor } from '../pipeline/ids';
import type { EnqueueOutcome, Ingest } from '../pipeline/ingest';
import type { EventJob, QuarantineJob } from '../pipeline/jobs';
import { isRejected, type CheckedHeaders, type SignatureCheck } from '../signature/check';
import { legacyTimestampMismatch } from '../signature/verify-legacy';
import { REJECTION_CLASS, type RejectionClass, type RejectionReason, type Verified } from '../signature/result';
import { parsePayload, type ParsedPayload } from './parse-payload';

export interface ReceiveDeps {
  /** Verification in two steps: the headers before the body is read, then the body (see signature/check.ts). */
  signature: SignatureCheck;
  ingest: Pick<Ingest, 'enqueueEvent' | 'enqueueQuarantine'>;
  clock: () => number;
  logger: Logger;
  metrics: Metrics;
  /** Masks sensitive fields of a payload before it is logged. */
  mask: (payload: unknown) => unknown;
}

export interface IncomingNotification {
  definition: EventDefinition;
  target: string;
  headers: Record<string, string | string[] | undefined>;
  /** What the header check returned before the body was read. */
  checked: CheckedHeaders;
  body: Buffer;
  /** Wall clock at the start of the request, for receivedAt. */
  startedAt: number;
  /** performance.now() at the start of the request, for latency. */
  startedAtHr: number;
}

export type Refusal = { kind: 'rejected'; class: RejectionClass; detail: string };

export type ReceiveResult = { kind: 'acknowledged'; outcome: NotificationOutcome; eventId: string } | Refusal | { kind: 'unavailable'; eventId: string };

/** What is known of a notification before its body is read. */
type NotificationStart = Pick<IncomingNotification, 'definition' | 'target' | 'startedAtHr'>;

/**
 * The cheap refusal: header presence and format, the signature's encoding and the timestamp window,
 * judged before the body is read, logged and counted like any other refusal. Otherwise the checked
 * headers, which `receiveNotification` takes so they are not judged twice.
 */
export function precheckNotification(
  deps: ReceiveDeps,
  definition: EventDefinition,
  target: string,
  headers: IncomingNotification['headers'],
  startedAtHr: number,
): CheckedHeaders | Refusal {
  const checked = deps.signature.headers(headers, deps.clock());
  return isRejected(checked) ? rejected(deps, { definition, target, startedAtHr }, checked.reason, checked.detail) : checked;
}

/** Whether the precheck refused rather than passing the checked headers on. */
export function isRefusal(result: CheckedHeaders | Refusal): result is Refusal {
  return 'kind' in result;
}

/**
 * `X-Merch-Id` is not signed: it is routing information (it names the sub-merchant and is part of
 * the event id), held to a strict format so that it cannot smuggle anything into ids, logs or
 * forwarded headers.
 */
const MERCHANT_ID = /^[A-Za-z0-9_.:-]{1,64}$/;

/**
 * Verify, then queue durably, then (and only then) acknowledge. A verified body that is not a valid
 * notification is quarantined and acknowledged, so the platform does not retry it forever.
 */
export async function receiveNotification(deps: ReceiveDeps, n: IncomingNotification): Promise<ReceiveResult> {
  const eventType = n.definition.type;
  const merchantHeader = n.headers['x-merch-id'];
  // An empty header counts as absent, as it always has; a repeated one arrives joined by ", " and fails.
  const merchantId = merchantHeader === undefined || merchantHeader === '' ? undefined : merchantHeader;
  if (merchantId !== undefined && (typeof merchantId !== 'string' || !MERCHANT_ID.test(merchantId))) {
    return rejected(deps, n, 'malformed_merchant_id', 'X-Merch-Id must be 1 to 64 characters of A-Z a-z 0-9 _ . : -');
  }

  const verified = deps.signature.body(n.checked, { method: 'POST', target: n.target, headers: n.headers, body: n.body, nowMs: deps.clock() });
  if (!verified.ok) return rejected(deps, n, verified.reason, verified.detail);

  const eventId = eventIdFor(eventType, merchantId, n.body);
  const utf8 = isUtf8(n.body);
  const text = utf8 ? n.body.toString('utf8') : '';
  // A legacy body whose parsed timestamp differs from the scanned one that verified is genuine (the
  // platform signed it) but ambiguous: quarantined and acknowledged, like any other verified body that
  // is not a valid notification, so it is kept for an operator, never forwarded, and not retried forever.
  const confirm = verified.scheme === 'legacy' ? (json: unknown) => legacyTimestampMismatch(json, verified.timestamp) : undefined;
  const parsed = utf8 ? parsePayload(n.definition, text, confirm) : NOT_UTF8;
  const job = jobOf(n, verified, eventId, merchantId, utf8 ? text : n.body.toString('base64'), utf8, parsed);

  let result: EnqueueOutcome;
  try {
    result = parsed.ok ? await deps.ingest.enqueueEvent(job as EventJob, verified.replayKey) : await deps.ingest.enqueueQuarantine(job as QuarantineJob, verified.replayKey);
  } catch (err) {
    return unavailable(deps, n, err, verified.replayKey, eventId);
  }
  if (result === 'signature_reused') return rejected(deps, n, 'signature_reused', 'legacy signature already used for another notification type');
  const outcome: NotificationOutcome = result === 'accepted' && !parsed.ok ? 'quarantined' : result;

  const series = deps.metrics.eventType(eventType).outcome[outcome];
  series.count.inc();
  const latencyMs = performance.now() - n.startedAtHr;
  series.latency.observe(latencyMs / 1000);
  const line = { eventId, eventType, nonce: verified.replayKey, merchantId, outcome, latencyMs: roundMs(latencyMs) };
  if (!parsed.ok && outcome === 'quarantined') {
    deps.logger.error('notification quarantined: verified but not a valid notification', { ...line, errors: parsed.errors });
    if (deps.logger.isDebugEnabled()) deps.logger.debug('quarantined body', { eventId, body: maskedBody(deps, text) });
  } else {
    deps.logger.record('info', 'notification received', line);
    if (parsed.ok && deps.logger.isDebugEnabled()) deps.logger.debug('notification body', { eventId, body: deps.mask(parsed.payload) });
  }
  return { kind: 'acknowledged', outcome, eventId };
}

const NOT_UTF8: ParsedPayload = { ok: false, errors: ['body is not valid UTF-8'] };

/**
 * The event job (or, when the body is not a valid notification, the quarantine job), built in one
 * object literal: optional fields are set only when present, as the job's JSON has always had them.
 */
function jobOf(n: IncomingNotification, verified: Verified, eventId: string, merchantId: string | undefined, rawBody: string, utf8: boolean, parsed: ParsedPayload): EventJob | QuarantineJob {
  const contentType = n.headers['content-type'];
  const job: Record<string, unknown> = {
    eventId,
    eventType: n.definition.type,
    receivedAt: new Date(n.startedAt).toISOString(),
    path: n.target,
    timestamp: verified.timestamp,
    nonce: verified.replayKey,
    scheme: verified.scheme,
  };
  if (merchantId) job.merchantId = merchantId;
  job.rawBody = rawBody;
  job.rawBodyEncoding = utf8 ? 'utf8' : 'base64';
  if (typeof contentType === 'string') job.contentType = contentType;
  job.signatureHeaders = verified.signatureHeaders;
  if (parsed.ok) job.payload = parsed.payload;
  else job.errors = parsed.errors;
  return job as unknown as EventJob | QuarantineJob;
}

function rejected(deps: ReceiveDeps, n: NotificationStart, reason: RejectionReason, detail: string): Refusal {
  const eventType = n.definition.type;
  const series = deps.metrics.eventType(eventType);
  series.rejected(reason).inc();
  observe(series, 'rejected', n);
  deps.logger.warn('notification rejected', { eventType, outcome: 'rejected', reason, detail, path: n.target, latencyMs: elapsed(n) });
  return { kind: 'rejected', class: REJECTION_CLASS[reason], detail };
}

/** Redis did not confirm: counted, logged, answered 503; anything else is a bug and goes up. */
function unavailable(deps: ReceiveDeps, n: IncomingNotification, err: unknown, replayKey: string, eventId: string): ReceiveResult {
  if (!(err instanceof EnqueueUnavailableError)) throw err;
  const eventType = n.definition.type;
  const series = deps.metrics.eventType(eventType);
  series.enqueueFailure.inc();
  if (err.reason === 'replicas') series.replicaShortfall.inc();
  series.outcome.unavailable.count.inc();
  observe(series, 'unavailable', n);
  deps.logger.error('notification not queued: Redis unavailable', { eventId, eventType, nonce: replayKey, outcome: 'unavailable', reason: err.reason, error: err.message, latencyMs: elapsed(n) });
  return { kind: 'unavailable', eventId };
}

function observe(series: EventTypeSeries, outcome: NotificationOutcome, n: NotificationStart): void {
  series.outcome[outcome].latency.observe((performance.now() - n.startedAtHr) / 1000);
}

function elapsed(n: NotificationStart): number {
  return roundMs(performance.now() - n.startedAtHr);
}

function roundMs(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

function maskedBody(deps: ReceiveDeps, text: string): unknown {
  try {
    return deps.mask(JSON.parse(text));
  } catch {
    return `(${text.length} characters, not JSON)`;
  }
}
