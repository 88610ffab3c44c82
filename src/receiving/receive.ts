import { isUtf8 } from 'node:buffer';
import type { EventDefinition } from '../model/event-table';
import type { Logger } from '../logging/logger';
import type { Metrics, VerifiedOutcome } from '../monitoring/metrics';
import { EnqueueUnavailableError } from '../pipeline/errors';
import { eventIdFor } from '../model/ids';
import type { EnqueueResult, Producer } from '../pipeline/producer';
import { eventJob, type QuarantineReason, type Received } from '../model/jobs';
import { isRejected, type CheckedHeaders, type SignatureCheck } from '../signature/check';
import { legacyTimestampMismatch } from '../signature/verify-legacy';
import { REJECTION_CLASS, type RejectionClass, type RejectionReason, type Verified } from '../signature/result';
import { parsePayload, type ParsedPayload } from './parse-payload';
import type { NotifySpan } from '../tracing/tracing';
import type { Evidence } from '../model/archive';
import { keyIdentity } from '../signature/fingerprint';
import { requestIdsOf } from '../pipeline/request-index';

export interface ReceiveDeps {
  /** Verification in two steps: the headers before the body is read, then the body (see signature/check.ts). */
  signature: SignatureCheck;
  ingest: Pick<Producer, 'enqueueEvent' | 'enqueueQuarantine'>;
  clock: () => number;
  logger: Logger;
  metrics: Metrics;
  /** Masks sensitive fields of a payload before it is logged. */
  mask: (payload: unknown) => unknown;
  /** What a notification of the named environment must also satisfy (the names are the verifier's). */
  environment(name: string): EnvironmentRules | undefined;
  /** Expectations of notifications, met by the notifications that carry their request_id. */
  expectations?: ExpectedNotifications;
}

/** A verified notification newly queued that an expectation is kept for. */
export interface Arrival {
  eventId: string;
  eventType: EventDefinition['type'];
  environment: string;
  requestId: string;
}

export interface ExpectedNotifications {
  /** The request_id an expectation of this notification would name (its type's path), if it carries one. */
  requestIdOf(eventType: EventDefinition['type'], payload: unknown): string | undefined;
  /**
   * Told of a notification newly queued for which the ingest script found an expectation kept (it meets it),
   * after it is stored; not awaited: the acknowledgement does not wait for it.
   */
  arrived(arrival: Arrival): void;
}

/** An environment's rules beyond its keys. */
export interface EnvironmentRules {
  /** When set, the address the notification came from must be one it allows. */
  sourceAllowed?: (address: string | undefined) => boolean;
  /** When set, the body (with `merchantId`) must match this acceptance rule. */
  accept?: (payload: unknown, merchantId: string | undefined) => boolean;
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
  /**
   * The sender's address as the source allowlist judges it (`req.ip`, so after `trust proxy`), asked only when needed.
   */
  source?: () => string | undefined;
  /** The request's server span, while tracing is on. */
  span?: NotifySpan;
}

export type Refusal = { kind: 'rejected'; class: RejectionClass; detail: string };

export type ReceiveResult =
  | { kind: 'acknowledged'; outcome: VerifiedOutcome; eventId: string }
  | Refusal
  | { kind: 'unavailable'; eventId: string };

/** What is known of a notification before its body is read. */
type NotificationStart = Pick<IncomingNotification, 'definition' | 'target' | 'startedAtHr' | 'span'>;

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
  span?: NotifySpan,
): CheckedHeaders | Refusal {
  const checked = deps.signature.headers(headers, deps.clock());
  return isRejected(checked)
    ? rejected(deps, { definition, target, startedAtHr, span }, checked.reason, checked.detail)
    : checked;
}

/** Whether the precheck refused rather than passing the checked headers on. */
export function isRefusal(result: CheckedHeaders | Refusal): result is Refusal {
  return 'kind' in result;
}

/**
 * `X-Merch-Id` is not signed: it is routing information (it names the sub-merchant), held to a strict
 * format so that it cannot smuggle anything into ids, logs or forwarded headers. It takes no part in
 * the event id, so it cannot turn one body into two events.
 */
const MERCHANT_ID = /^[A-Za-z0-9_.:-]{1,64}$/;

/**
 * Verify, then queue durably, then (and only then) acknowledge. A notification belongs to the
 * environment whose key verified it, and must then satisfy that environment's rules: its source
 * addresses (refused 403) and its acceptance rule. A verified body that is not a valid notification,
 * or that the acceptance rule leaves out, is quarantined and acknowledged, so the platform does not
 * retry it forever.
 */
export async function receiveNotification(deps: ReceiveDeps, n: IncomingNotification): Promise<ReceiveResult> {
  const eventType = n.definition.type;
  const merchantHeader = n.headers['x-merch-id'];
  // An empty header counts as absent, as it always has; a repeated one arrives joined by ", " and fails.
  const merchantId = merchantHeader === undefined || merchantHeader === '' ? undefined : merchantHeader;
  if (merchantId !== undefined && (typeof merchantId !== 'string' || !MERCHANT_ID.test(merchantId))) {
    return rejected(deps, n, 'malformed_merchant_id', 'X-Merch-Id must be 1 to 64 characters of A-Z a-z 0-9 _ . : -');
  }

  const verified = deps.signature.body(n.checked, {
    method: 'POST',
    target: n.target,
    headers: n.headers,
    body: n.body,
    nowMs: deps.clock(),
  });
  if (!verified.ok) return rejected(deps, n, verified.reason, verified.detail);
  const rules = deps.environment(verified.environment);
  if (rules?.sourceAllowed) {
    const source = n.source?.();
    if (!rules.sourceAllowed(source))
      return rejected(
        deps,
        n,
        'source_not_allowed',
        `the ${verified.environment} environment's notifications come from its sourceCidrs only`,
        source,
      );
  }

  const eventId = eventIdFor(eventType, verified.environment, n.body);
  n.span?.verified(eventId, verified.environment);
  const utf8 = isUtf8(n.body);
  const text = utf8 ? n.body.toString('utf8') : '';
  // A legacy body whose parsed timestamp differs from the scanned one that verified is genuine (the
  // platform signed it) but ambiguous: quarantined and acknowledged, like any other verified body that
  // is not a valid notification, so it is kept for an operator, never forwarded, and not retried forever.
  const confirm =
    verified.scheme === 'legacy' ? (json: unknown) => legacyTimestampMismatch(json, verified.timestamp) : undefined;
  const parsed = utf8 ? parsePayload(n.definition, text, confirm) : NOT_UTF8;
  const accepted = !parsed.ok || !rules?.accept || rules.accept(parsed.payload, merchantId);
  const received = receivedOf(n, verified, eventId, merchantId, utf8 ? text : n.body.toString('base64'), utf8);
  if (n.span) received.trace = n.span.traceparent;

  const evidence = evidenceOf(verified, parsed.ok ? parsed.payload : undefined);
  let result: EnqueueResult;
  let reason: QuarantineReason | undefined;
  let errors: string[] | undefined;
  const redisSpan = n.span?.redis('ingest');
  const requestId = parsed.ok && accepted ? deps.expectations?.requestIdOf(eventType, parsed.payload) : undefined;
  let expected = false;
  try {
    if (parsed.ok && accepted) {
      const probe = requestId === undefined ? undefined : { requestId, found: () => (expected = true) };
      result = await deps.ingest.enqueueEvent(eventJob(received, parsed.payload), verified.replayKey, evidence, probe);
    } else {
      reason = parsed.ok ? 'not_accepted' : 'invalid';
      errors = parsed.ok ? [`does not match the ${verified.environment} environment's acceptance rule`] : parsed.errors;
      result = await deps.ingest.enqueueQuarantine({ ...received, reason, errors }, verified.replayKey, { evidence });
    }
    if (typeof result === 'object' && result.kind === 'signature_reused') {
      // One legacy signature verifies on every notify path (its string has no path): it serves the
      // event type it first arrived for, and this copy is kept for an operator to judge which was genuine.
      reason = 'signature_reused';
      errors = [`legacy signature already accepted for ${result.boundTo}; this copy arrived for ${eventType}`];
      const boundTo = result.boundTo;
      result = await deps.ingest.enqueueQuarantine({ ...received, reason, errors }, verified.replayKey, {
        bind: false,
        evidence,
      });
      if (result === 'accepted') result = { kind: 'signature_reused', boundTo };
    }
  } catch (err) {
    redisSpan?.end(err);
    return unavailable(deps, n, err, verified, eventId);
  }
  redisSpan?.end();

  const series = deps.metrics.eventType(eventType).environment(verified.environment);
  const outcome = outcomeOf(result, reason);
  if (outcome === 'accepted' && expected && requestId !== undefined) {
    deps.expectations?.arrived({ eventId, eventType, environment: verified.environment, requestId });
  }
  const counter =
    reason === 'signature_reused' && outcome === 'quarantined'
      ? series.quarantined(reason)
      : series.outcome[outcome].count;
  counter.inc();
  const latencyMs = performance.now() - n.startedAtHr;
  const line = {
    eventId,
    eventType,
    environment: verified.environment,
    nonce: verified.replayKey,
    merchantId,
    outcome,
    latencyMs: roundMs(latencyMs),
  };
  if (n.span) {
    n.span.outcome(outcome, reason);
    deps.metrics.observeAck(eventType, outcome, latencyMs / 1000, n.span.traceId);
    Object.assign(line, n.span.logIds);
  } else {
    series.outcome[outcome].latency.observe(latencyMs / 1000);
  }
  if (typeof result === 'object' && result.kind === 'conflict') {
    deps.logger.warn('notification not queued: the same body arrived before under another X-Merch-Id', {
      ...line,
      firstMerchantId: result.firstMerchantId || undefined,
    });
  } else if (outcome === 'quarantined' && reason === 'signature_reused') {
    deps.logger.warn('notification quarantined: its legacy signature was accepted before for another event type', {
      ...line,
      reason,
      errors,
    });
  } else if (outcome === 'not_accepted') {
    deps.logger.warn('notification quarantined: verified, but its environment does not accept it', { ...line, reason });
  } else if (outcome === 'quarantined') {
    deps.logger.error('notification quarantined: verified but not a valid notification', { ...line, reason, errors });
    if (deps.logger.isDebugEnabled()) deps.logger.debug('quarantined body', { eventId, body: maskedBody(deps, text) });
  } else {
    deps.logger.record('info', 'notification received', line);
    if (parsed.ok && deps.logger.isDebugEnabled())
      deps.logger.debug('notification body', { eventId, body: deps.mask(parsed.payload) });
  }
  return { kind: 'acknowledged', outcome, eventId };
}

/** Which key verified the notification (and the body's request id), for the archive when it is on. */
function evidenceOf(verified: Verified, payload: unknown): Evidence {
  const { fingerprint, pem } = keyIdentity(verified.key);
  const requestId = requestIdsOf(payload)[0];
  return {
    keyFingerprint: fingerprint,
    keyPem: pem,
    ...(verified.signedMerchantId !== undefined ? { signedMerchantId: verified.signedMerchantId } : {}),
    ...(requestId !== undefined ? { requestId } : {}),
  };
}

const NOT_UTF8: ParsedPayload = { ok: false, errors: ['body is not valid UTF-8'] };

/**
 * How an enqueue ends, as counted: a new quarantine counts as one (`not_accepted` on its own), a known one as what it
 * is.
 */
function outcomeOf(
  result: EnqueueResult,
  reason: QuarantineReason | undefined,
): Exclude<VerifiedOutcome, 'unavailable'> {
  if (typeof result === 'object') return result.kind === 'conflict' ? 'conflict' : 'quarantined';
  if (result !== 'accepted' || reason === undefined) return result;
  return reason === 'not_accepted' ? 'not_accepted' : 'quarantined';
}

/**
 * What every job of the notification holds, built in one object literal: optional fields are set
 * only when present, as the job's JSON has always had them.
 */
function receivedOf(
  n: IncomingNotification,
  verified: Verified,
  eventId: string,
  merchantId: string | undefined,
  rawBody: string,
  utf8: boolean,
): Received {
  const contentType = n.headers['content-type'];
  return {
    eventId,
    eventType: n.definition.type,
    receivedAt: new Date(n.startedAt).toISOString(),
    path: n.target,
    timestamp: verified.timestamp,
    nonce: verified.replayKey,
    scheme: verified.scheme,
    ...(merchantId ? { merchantId } : {}),
    environment: verified.environment,
    rawBody,
    rawBodyEncoding: utf8 ? 'utf8' : 'base64',
    ...(typeof contentType === 'string' ? { contentType } : {}),
    signatureHeaders: verified.signatureHeaders,
  };
}

function rejected(
  deps: ReceiveDeps,
  n: NotificationStart,
  reason: RejectionReason,
  detail: string,
  source?: string,
): Refusal {
  const eventType = n.definition.type;
  const series = deps.metrics.eventType(eventType);
  series.rejected(reason).inc();
  n.span?.outcome('rejected', reason);
  if (n.span)
    deps.metrics.observeAck(eventType, 'rejected', (performance.now() - n.startedAtHr) / 1000, n.span.traceId);
  else series.rejectedLatency.observe((performance.now() - n.startedAtHr) / 1000);
  deps.logger.warn('notification rejected', {
    eventType,
    outcome: 'rejected',
    reason,
    detail,
    path: n.target,
    ...(source !== undefined ? { source } : {}),
    latencyMs: elapsed(n),
    ...n.span?.logIds,
  });
  return { kind: 'rejected', class: REJECTION_CLASS[reason], detail };
}

/** Redis did not confirm: counted, logged, answered 503; anything else is a bug and goes up. */
function unavailable(
  deps: ReceiveDeps,
  n: IncomingNotification,
  err: unknown,
  verified: Verified,
  eventId: string,
): ReceiveResult {
  if (!(err instanceof EnqueueUnavailableError)) throw err;
  const eventType = n.definition.type;
  const series = deps.metrics.eventType(eventType);
  series.enqueueFailure.inc();
  if (err.reason === 'replicas') series.replicaShortfall.inc();
  const unavailableSeries = series.environment(verified.environment).outcome.unavailable;
  unavailableSeries.count.inc();
  n.span?.outcome('unavailable', err.reason);
  if (n.span)
    deps.metrics.observeAck(eventType, 'unavailable', (performance.now() - n.startedAtHr) / 1000, n.span.traceId);
  else unavailableSeries.latency.observe((performance.now() - n.startedAtHr) / 1000);
  deps.logger.error('notification not queued: Redis unavailable', {
    eventId,
    eventType,
    environment: verified.environment,
    nonce: verified.replayKey,
    outcome: 'unavailable',
    reason: err.reason,
    error: err.message,
    latencyMs: elapsed(n),
    ...n.span?.logIds,
  });
  return { kind: 'unavailable', eventId };
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
