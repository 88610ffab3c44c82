import { isUtf8 } from 'node:buffer';
import type { SeriesStart } from '../forwarding/delivery-story';
import type { EventPayloadMap, EventType } from '../events/table';
import type { ErrorClass } from '../forwarding/failure';
import type { SignatureScheme } from '../signature/result';
import { eventIdFor } from './ids';

interface ReceivedNotification {
  /** Deterministic: the same event type and body always give the same id. */
  eventId: string;
  receivedAt: string;
  /** The request target as received (path and query string). */
  path: string;
  /** The signed timestamp, milliseconds. */
  timestamp: number;
  /** The nonce (current scheme) or a hash of the signature (legacy scheme). */
  nonce: string;
  scheme: SignatureScheme;
  /** From `X-Merch-Id`, when a partner account receives callbacks for sub-merchants. */
  merchantId?: string;
  /** The platform environment whose key verified the signature. */
  environment: string;
  /**
   * Set when an operator replayed it with a corrected body: the body is no longer the one the
   * platform signed, and every forwarded request says so.
   */
  corrected?: true;
  /** The body exactly as received; Base64 when it is not valid UTF-8. */
  rawBody: string;
  rawBodyEncoding: 'utf8' | 'base64';
  contentType?: string;
  /** The platform's signature headers, for pass-through forwarding. */
  signatureHeaders: Record<string, string>;
}

/** A verified, schema-valid notification waiting in its event type's queue. */
export type EventJob<E extends EventType = EventType> = {
  [K in E]: ReceivedNotification & { eventType: K; payload: EventPayloadMap[K] };
}[E];

/**
 * Why a verified notification is kept for an operator instead of forwarded: `invalid` (not UTF-8, not
 * JSON, or not its schema), `not_accepted` (its environment's acceptance rule does not match it),
 * `signature_reused` (a legacy signature already accepted for another event type).
 */
export type QuarantineReason = 'invalid' | 'not_accepted' | 'signature_reused';

/** A verified notification kept for an operator (see QuarantineReason), never forwarded on its own. */
export interface QuarantineJob extends ReceivedNotification {
  eventType: EventType;
  /** Absent on jobs kept before reasons were recorded: those are `invalid`. */
  reason?: QuarantineReason;
  errors: string[];
}

/** What the fan-out step returns: the targets it gave a delivery job. */
export interface FanoutResult {
  targets: string[];
}

/**
 * One (event, target) delivery. It carries everything the request needs, so its retries do not
 * depend on the event job, which the retention settings remove long before 12 attempts are spent.
 */
export type DeliveryJob = Pick<
  EventJob,
  'eventId' | 'eventType' | 'receivedAt' | 'path' | 'rawBody' | 'rawBodyEncoding' | 'contentType' | 'signatureHeaders' | 'merchantId' | 'environment' | 'corrected'
> & {
  target: string;
  /** The subscribed targets whose filter left this event out (for the event view), when there were any. */
  filtered?: string[];
  /** Its ordering key's value, for a target with ordered delivery (absent: delivered unordered). */
  orderKey?: string;
  /** Set when the delivery is dead-lettered: what the last attempt saw. */
  lastFailure?: DeliveryFailure;
  /** Set on a delivery a resend added (none existed): who started its first attempt series, and when. */
  firstSeries?: SeriesStart;
};

/**
 * What a successful delivery attempt returns (the job's return value, which costs no extra Redis call).
 * Kept small: it travels to Redis with every completion. The headers sent are not kept on success
 * (they follow from the event and the target's settings); a failed attempt keeps them masked.
 */
export interface DeliveryResult {
  status: number;
  latencyMs: number;
}

/** One failed attempt, as data: in the job's log, the admin API's event view and the dead letter. */
export interface DeliveryFailure {
  at: string;
  attempt: number;
  target?: string;
  /** http_status, timeout, connection_refused, connection_reset, dns, tls, network; absent for an unexpected error. */
  errorClass?: ErrorClass;
  status?: number;
  /** The readable summary, also the job's failedReason. */
  error: string;
  latencyMs?: number;
  /** The first bytes of the target's answer. */
  responseExcerpt?: string;
  /** The request headers sent, credentials and signatures masked. */
  requestHeaders?: Record<string, string>;
}

/** A verified request, as the receiver has it after verification. */
export interface VerifiedRequest<E extends EventType = EventType> {
  eventType: E;
  merchantId?: string;
  environment: string;
  body: Buffer;
  receivedAtMs: number;
  /** The request target as received (path and query string). */
  path: string;
  timestamp: number;
  /** The replay key: the nonce, or a hash of the legacy signature. */
  nonce: string;
  scheme: SignatureScheme;
  contentType?: string;
  signatureHeaders: Record<string, string>;
}

/** What every job of a received notification carries, its event id derived from environment, type and body. */
export function receivedNotification<E extends EventType>(r: VerifiedRequest<E>): ReceivedNotification & { eventType: E } {
  const utf8 = isUtf8(r.body);
  return {
    eventId: eventIdFor(r.eventType, r.environment, r.body),
    eventType: r.eventType,
    receivedAt: new Date(r.receivedAtMs).toISOString(),
    path: r.path,
    timestamp: r.timestamp,
    nonce: r.nonce,
    scheme: r.scheme,
    ...(r.merchantId ? { merchantId: r.merchantId } : {}),
    environment: r.environment,
    rawBody: r.body.toString(utf8 ? 'utf8' : 'base64'),
    rawBodyEncoding: utf8 ? 'utf8' : 'base64',
    ...(r.contentType !== undefined ? { contentType: r.contentType } : {}),
    signatureHeaders: r.signatureHeaders,
  };
}

/** The event job of a verified, schema-valid notification. */
export function buildEventJob<E extends EventType>(r: VerifiedRequest<E>, payload: EventPayloadMap[E]): EventJob<E> {
  return { ...receivedNotification(r), payload } as EventJob<E>;
}

export function toDeliveryJob(event: EventJob, target: string, filtered: readonly string[] = [], orderKey?: string): DeliveryJob {
  const { eventId, eventType, receivedAt, path, rawBody, rawBodyEncoding, contentType, signatureHeaders, merchantId, environment, corrected } = event;
  const job: DeliveryJob = { eventId, eventType, receivedAt, path, rawBody, rawBodyEncoding, contentType, signatureHeaders, merchantId, environment, target };
  if (corrected) job.corrected = true;
  if (filtered.length > 0) job.filtered = [...filtered];
  if (orderKey !== undefined) job.orderKey = orderKey;
  return job;
}

export function decodeRawBody(job: Pick<ReceivedNotification, 'rawBody' | 'rawBodyEncoding'>): Buffer {
  return Buffer.from(job.rawBody, job.rawBodyEncoding);
}
