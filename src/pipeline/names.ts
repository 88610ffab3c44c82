import type { EventType } from '../events/table';

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

/** Keys of our own beside BullMQ's, under the same prefix so one prefix (or hash tag) holds everything. */
export const ownKeys = {
  /**
   * An accepted replay key (nonce, or legacy signature), bound to the event type it arrived for;
   * per scheme, so a current-scheme nonce can never collide with a legacy signature's key.
   */
  replay: (prefix: string, scheme: string, replayKey: string) => `${prefix}:replay:${scheme}:${replayKey}`,
  /** One bucket of the request-id index (request id -> event ids): a day (UTC, days since 1970) and a shard. */
  requestIndex: (prefix: string, day: number, shard: number) => `${prefix}:r:${day}:${shard}`,
  /** The index's earlier form (a set), still read until the last of its entries expires. */
  legacyRequestIndex: (prefix: string, requestId: string) => `${prefix}:index:request_id:${requestId}`,
};
