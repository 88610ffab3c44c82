import type { EventType } from './event-table';

/** Notifications that verified but are not valid JSON or fail their schema. */
export const QUARANTINE_QUEUE = 'quarantine';

/** The queue holding received events of one type; the name is the event type itself. */
export function eventQueueName(type: EventType): string {
  return type;
}

/** The queue of one target's deliveries. */
export function deliveryQueueName(target: string): string {
  return `deliver.${target}`;
}

/**
 * The prefix of every key the service writes: the configured `queuePrefix` as a hash tag, `{whr}`.
 * Redis Cluster places a key by the part between braces, so every key of the service (all queues,
 * de-duplication keys, replay bindings, the request_id index) lands in one hash slot. It has to:
 * BullMQ's scripts touch several keys of a queue at once, and the ingest script checks and binds the
 * replay key, de-duplicates and adds the job in one call; Redis runs a script only over keys of one
 * slot. The same layout is used on a single Redis and under Sentinel, so one layout is tested
 * everywhere. docs/deploy.md says what a cluster still buys under this rule.
 */
export function keyPrefix(queuePrefix: string): string {
  return `{${queuePrefix}}`;
}

/** Keys of our own beside BullMQ's, under the same prefix so one prefix (or hash tag) holds everything. */
export const ownKeys = {
  /**
   * An accepted replay key (nonce, or legacy signature), bound to the event type it arrived for and
   * the event id (`<type> <event id>`, written by the ingest script);
   * per scheme, so a current-scheme nonce can never collide with a legacy signature's key.
   */
  replay: (prefix: string, scheme: string, replayKey: string) => `${prefix}:replay:${scheme}:${replayKey}`,
  /**
   * Written after each ingest when replicas must confirm it: WAIT counts the writes of its own
   * connection, and a replay or a duplicate may write nothing of its own (its event may have come
   * through another connection); this write puts every earlier write of the master behind it.
   */
  replicaMarker: (prefix: string) => `${prefix}:replica-ack`,
  /**
   * The de-duplication record of a received event (its value: the event type), kept for the
   * de-duplication window after its jobs are gone. Short on purpose: it is the one key every event
   * leaves for the whole window.
   */
  dedup: (prefix: string, eventId: string) => `${prefix}:d:${eventId}`,
  /**
   * The later copies of a received event (fields `duplicates`, `replays`, `lastAt` in ms since 1970),
   * written by the ingest script only when a copy arrives, and expiring with the event's
   * de-duplication record.
   */
  copies: (prefix: string, eventId: string) => `${prefix}:c:${eventId}`,
  /**
   * The sequence of one ordering key of one target: the event ids of its deliveries in receipt
   * order; the first is the one that may be in flight. Its name carries a digest of the key value.
   */
  orderSequence: (prefix: string, target: string, keyDigest: string) => `${prefix}:o:${target}:${keyDigest}`,
  /** One target's blocked ordering keys (key value -> ms since 1970 when its first delivery was dead-lettered). */
  orderBlocked: (prefix: string, target: string) => `${prefix}:ob:${target}`,
  /**
   * The archive's backlog: a stream of what was acknowledged (and of deliveries that ended) not yet
   * written to PostgreSQL; the archiver deletes each entry once its transaction committed.
   */
  archive: (prefix: string) => `${prefix}:archive`,
  /**
   * The archive's key registry (fingerprint -> PEM) of the keys that verified what the archive stream
   * holds: published by the producer before its first entry each key verified (and again now and then),
   * read by the archiver for the keys table. Its entries never change: a fingerprint names one key.
   */
  archiveKeys: (prefix: string) => `${prefix}:archive:keys`,
  /** One bucket of the request-id index (request id -> event ids): a day (UTC, days since 1970) and a shard. */
  requestIndex: (prefix: string, day: number, shard: number) => `${prefix}:r:${day}:${shard}`,
  /** One expectation of a notification (a hash: its fields, state and inquiry attempts). */
  expectation: (prefix: string, id: string) => `${prefix}:x:${id}`,
  /** Expectations with something to do (an inquiry), by the time it is due (ms since 1970). */
  expectationsDue: (prefix: string) => `${prefix}:x:due`,
  /** Expectations not yet settled (open or overdue), by due time: their count is bounded. */
  expectationsOpen: (prefix: string) => `${prefix}:x:open`,
  /** Every kept expectation, by creation time: the listing, and the removal of settled ones past retention. */
  expectationsAll: (prefix: string) => `${prefix}:x:all`,
  /** {@link expectationMatchField} -> the expectation a notification of it meets. */
  expectationMatch: (prefix: string) => `${prefix}:x:match`,
  /** The expectations (ids) of one request_id, for a search by it. */
  expectationsOfRequest: (prefix: string, requestId: string) => `${prefix}:x:r:${requestId}`,
  /** A nonce of a platform's answer to an inquiry, kept past the timestamp window: one seen again is a replay. */
  inquiryNonce: (prefix: string, nonce: string) => `${prefix}:x:n:${nonce}`,
};

/**
 * The field of the expectation match hash (ownKeys.expectationMatch) that a notification of this
 * environment and event type carrying this request_id meets: written when an expectation is added,
 * looked up by the ingest script for each notification carrying a request_id.
 */
export function expectationMatchField(environment: string, eventType: string, requestId: string): string {
  return `${environment} ${eventType} ${requestId}`;
}
