import type { EventJob } from '../queue/job';

/**
 * One (event, target) delivery. It carries everything the request needs, so its retries do not
 * depend on the event job, which the retention settings remove long before 12 attempts are spent.
 */
export type DeliveryJob = Pick<
  EventJob,
  'eventId' | 'eventType' | 'receivedAt' | 'path' | 'rawBody' | 'rawBodyEncoding' | 'contentType' | 'signatureHeaders' | 'merchantId'
> & {
  target: string;
  /** Set when the delivery is dead-lettered: what the last attempt saw. */
  lastFailure?: DeliveryFailure;
};

export interface DeliveryFailure {
  at: string;
  attempt: number;
  status?: number;
  error: string;
  /** The first bytes of the target's answer. */
  responseExcerpt?: string;
}

export function deliveryQueueName(target: string): string {
  return `deliver.${target}`;
}

export function toDeliveryJob(event: EventJob, target: string): DeliveryJob {
  const { eventId, eventType, receivedAt, path, rawBody, rawBodyEncoding, contentType, signatureHeaders, merchantId } = event;
  return { eventId, eventType, receivedAt, path, rawBody, rawBodyEncoding, contentType, signatureHeaders, merchantId, target };
}
