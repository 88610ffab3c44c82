import type { EventType } from '../events/table';

export const QUARANTINE_QUEUE = 'quarantine';

/** The BullMQ queue holding received events of one type; the name is the event type itself. */
export function eventQueueName(type: EventType): string {
  return type;
}
