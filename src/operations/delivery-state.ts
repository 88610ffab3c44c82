import { isDropped } from '../model/jobs';

/**
 * A delivery's state in an operator's words, from its job's BullMQ state: delivered, retrying (an
 * attempt failed and another is due), dead letter, dropped (its target's transform returned null, so
 * nothing was sent), filtered (the target's filter left the event out,
 * so there is no job), waiting for its turn (an ordered delivery parked behind an earlier one of its
 * key), paused (its target is paused), queued (not attempted yet), in flight.
 */
export const DELIVERY_STATES = [
  'delivered',
  'retrying',
  'dead_letter',
  'dropped',
  'filtered',
  'waiting_turn',
  'paused',
  'queued',
  'in_flight',
] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

export const DELIVERY_STATE_LABELS: Record<DeliveryState, string> = {
  delivered: 'delivered',
  retrying: 'retrying',
  dead_letter: 'dead letter',
  dropped: 'dropped by its transform',
  filtered: 'filtered',
  waiting_turn: 'waiting for its turn',
  paused: 'paused',
  queued: 'queued',
  in_flight: 'in flight',
};

export function isDeliveryState(text: string): text is DeliveryState {
  return (DELIVERY_STATES as readonly string[]).includes(text);
}

/**
 * `bullState`: the job's BullMQ state (`completed`, `failed`, `delayed`, `active`, `waiting`, `wait`, `prioritized`,
 * `paused`, …).
 */
export function deliveryStateOf(
  bullState: string,
  job: { attemptsMade: number; data: { orderKey?: string }; returnvalue?: unknown },
  targetPaused: boolean,
): DeliveryState {
  if (bullState === 'completed') return isDropped(job.returnvalue) ? 'dropped' : 'delivered';
  if (bullState === 'failed') return 'dead_letter';
  if (bullState === 'active') return 'in_flight';
  if (bullState === 'delayed')
    return job.attemptsMade > 0 ? 'retrying' : job.data.orderKey !== undefined ? 'waiting_turn' : 'queued';
  if (targetPaused) return 'paused';
  return job.attemptsMade > 0 ? 'retrying' : 'queued';
}
