import { ownKeys } from '../model/names';
import type { EventLookup } from '../pipeline/lookup';
import type { QueueRegistry } from '../pipeline/queue-registry';
import { keyDigest } from '../routing/ordering-key';
import { deliveryStateOf, type DeliveryState } from './delivery-state';
import { findEvent, type DeliveryView, type EventView } from './event-lookup';

/** Where an ordered delivery stands in its key's sequence. */
export interface OrderingView {
  key: string;
  /**
   * 0: it heads the sequence (may go); n: n deliveries of the key go before it; absent: not in the sequence (done,
   * released, or resent after it was done).
   */
  position?: number;
  /** The delivery it waits for (the head of the sequence), when it is not itself the head. */
  waitsFor?: string;
  /** The head is a dead letter holding the key back (`onDeadLetter: block`). */
  blocked: boolean;
}

export interface DeliveryDetail extends DeliveryView {
  /** The state in an operator's words; `unreadable`: its job cannot be read (`unreadable` says why). */
  consoleState: DeliveryState | 'unreadable';
  ordering?: OrderingView;
}

/**
 * The admin API's event view, with what the console adds: the nonce, each delivery's state in words and its place in
 * its ordering key's sequence.
 */
export interface EventDetail extends Omit<EventView, 'deliveries'> {
  /** The current scheme's nonce; absent for the legacy scheme, whose replay key is a hash of the signature. */
  nonce?: string;
  deliveries: DeliveryDetail[];
}

type Pipeline = Pick<QueueRegistry, 'deliveryQueue' | 'redis' | 'prefix'> &
  Pick<EventLookup, 'findEvent' | 'deliveriesOf' | 'copiesOf'>;

async function orderingOf(pipeline: Pipeline, target: string, eventId: string, key: string): Promise<OrderingView> {
  const sequence = ownKeys.orderSequence(pipeline.prefix, target, keyDigest(key));
  const [position, head] = await Promise.all([
    pipeline.redis.lpos(sequence, eventId),
    pipeline.redis.lindex(sequence, 0),
  ]);
  const waitsFor = head && head !== eventId && position !== null ? head : undefined;
  const headState = head ? await pipeline.deliveryQueue(target)?.getJobState(head) : undefined;
  return {
    key,
    ...(position !== null ? { position } : {}),
    ...(waitsFor ? { waitsFor } : {}),
    blocked: headState === 'failed',
  };
}

/** One event as the console shows it; undefined when no job holds it. */
export async function eventDetail(
  pipeline: Pipeline,
  eventId: string,
  mask: (p: unknown) => unknown,
): Promise<EventDetail | undefined> {
  const view = await findEvent(pipeline, eventId, mask);
  const found = await pipeline.findEvent(eventId);
  if (!view || !found) return undefined;
  const deliveries = await Promise.all(
    view.deliveries.map(async (d): Promise<DeliveryDetail> => {
      if (d.state === 'unreadable') return { ...d, consoleState: 'unreadable' };
      const queue = pipeline.deliveryQueue(d.target);
      const job = d.state === 'filtered' ? undefined : await queue?.getJob(eventId);
      if (!queue || !job) return { ...d, consoleState: 'filtered' };
      const consoleState = deliveryStateOf(d.state, job, await queue.isPaused());
      const key = job.data.orderKey;
      return {
        ...d,
        consoleState,
        ...(key !== undefined ? { ordering: await orderingOf(pipeline, d.target, eventId, key) } : {}),
      };
    }),
  );
  const nonce = nonceOf(found.job.data);
  return { ...view, ...(nonce !== undefined ? { nonce } : {}), deliveries };
}

/**
 * An event job and a quarantine job keep the nonce; a delivery job keeps the platform's signature
 * headers for pass-through, the nonce among them (`<prefix>-nonce`, current scheme only).
 */
function nonceOf(data: {
  signatureHeaders: Record<string, string>;
  nonce?: string;
  scheme?: string;
}): string | undefined {
  if (data.scheme === 'legacy') return undefined;
  if (data.nonce !== undefined) return data.nonce;
  const header = Object.keys(data.signatureHeaders).find((h) => h.endsWith('-nonce'));
  return header ? data.signatureHeaders[header] : undefined;
}
