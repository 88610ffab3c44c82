import type { EventPayloadMap, EventType } from './event-table';

/** The platform's two signature schemes. */
export type SignatureScheme = 'current' | 'legacy';

/** What started an attempt series: the notification's receipt, a dead letter's replay, or a resend. */
export type SeriesTrigger = 'received' | 'replay' | 'resend';

/** The mark at the start of a series an operator started (in the job's log, or on a job a resend added). */
export interface SeriesStart {
  series: Exclude<SeriesTrigger, 'received'>;
  /** The operator: `token`, `basic:<user>` or `cli:<os user>`. */
  by: string;
  at: string;
}

/** What kind of failure an attempt met, in words an operator can act on. */
/**
 * How an attempt failed; `unroutable`, `no_stream` and `broker` are a message broker's refusals, `database` a
 * PostgreSQL destination's (by SQLSTATE), `transform_error` the target's transform's.
 */
export type ErrorClass =
  | 'http_status'
  | 'timeout'
  | 'connection_refused'
  | 'connection_reset'
  | 'dns'
  | 'tls'
  | 'network'
  | 'unroutable'
  | 'no_stream'
  | 'broker'
  | 'database'
  | 'transform_error';

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
  /**
   * `inquiry`: built from the platform's signed answer to an inquiry about a notification that never
   * came (it is not a notification the platform sent); every forwarded request says so.
   */
  source?: 'inquiry';
  /** The body exactly as received; Base64 when it is not valid UTF-8. */
  rawBody: string;
  rawBodyEncoding: 'utf8' | 'base64';
  contentType?: string;
  /** The platform's signature headers, for pass-through forwarding. */
  signatureHeaders: Record<string, string>;
  /**
   * The W3C `traceparent` of the notify request's span, written only while tracing is on: every
   * delivery attempt, whenever and wherever it runs, is a span of that trace.
   */
  trace?: string;
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

/** What a delivery job copies of its event. */
export type DeliveryFields = Pick<
  EventJob,
  | 'eventId'
  | 'eventType'
  | 'receivedAt'
  | 'path'
  | 'rawBody'
  | 'rawBodyEncoding'
  | 'contentType'
  | 'signatureHeaders'
  | 'merchantId'
  | 'environment'
  | 'corrected'
  | 'source'
  | 'trace'
>;

/**
 * One (event, target) delivery. It carries everything the request needs, so its retries do not
 * depend on the event job, which the retention settings remove long before 12 attempts are spent.
 */
export type DeliveryJob = DeliveryFields & {
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
  /** The target's HTTP status; a broker answers no status. */
  status?: number;
  latencyMs: number;
  /** What a broker confirmed, e.g. `stream EVENTS seq 42`, `duplicate`. */
  confirmed?: string;
}

/** What a delivery returns when the target's transform returned null: nothing was sent. */
export interface DroppedDelivery {
  dropped: 'transform';
  latencyMs: number;
}

export function isDropped(result: unknown): result is DroppedDelivery {
  return typeof result === 'object' && result !== null && (result as Partial<DroppedDelivery>).dropped === 'transform';
}

/** One failed attempt, as data: in the job's log, the admin API's event view and the dead letter. */
export interface DeliveryFailure {
  at: string;
  attempt: number;
  target?: string;
  /**
   * http_status, timeout, connection_refused, connection_reset, dns, tls, network, unroutable, no_stream, broker,
   * database, transform_error; absent for an unexpected error.
   */
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

/** What every job of a received notification holds: its event type, its receipt and its raw body. */
export type Received = ReceivedNotification & { eventType: EventType };

/**
 * The event job of a received notification whose body passed its event type's schema (`payload`:
 * what that parse returned). EventJob pairs each event type with its payload's type, which a value
 * checked at run time cannot show the compiler: the pairing is asserted here, once, for every
 * writer (the receiver, a quarantine replay).
 */
export function eventJob(received: Received, payload: unknown): EventJob {
  return { ...received, payload } satisfies Received & { payload: unknown } as EventJob;
}

/**
 * One (event, target) delivery job, built in one literal; optional fields are present only when set,
 * in a fixed order, so every writer stores the same JSON for the same delivery. Planned by
 * routing/plan.ts, which decides `filtered` and `orderKey`.
 */
export function toDeliveryJob(
  event: DeliveryFields,
  target: string,
  filtered: readonly string[] = [],
  orderKey?: string,
): DeliveryJob {
  const job: DeliveryJob = {
    eventId: event.eventId,
    eventType: event.eventType,
    receivedAt: event.receivedAt,
    path: event.path,
    rawBody: event.rawBody,
    rawBodyEncoding: event.rawBodyEncoding,
    contentType: event.contentType,
    signatureHeaders: event.signatureHeaders,
    merchantId: event.merchantId,
    environment: event.environment,
    target,
  };
  if (event.corrected) job.corrected = true;
  if (event.source !== undefined) job.source = event.source;
  if (event.trace !== undefined) job.trace = event.trace;
  if (filtered.length > 0) job.filtered = [...filtered];
  if (orderKey !== undefined) job.orderKey = orderKey;
  return job;
}

export function decodeRawBody(job: Pick<ReceivedNotification, 'rawBody' | 'rawBodyEncoding'>): Buffer {
  return Buffer.from(job.rawBody, job.rawBodyEncoding);
}
