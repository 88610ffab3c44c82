import type { EventView } from './event-lookup';

/** Where an event stands, in an operator's words: the console's "Where" and the CLI's event line. */
export function whereText(event: Pick<EventView, 'state' | 'quarantineReason' | 'deliveries' | 'queue'>): string {
  if (event.quarantineReason !== undefined) return `quarantined (${event.quarantineReason}): forwarded nowhere`;
  if (event.state === 'routed') {
    const n = event.deliveries.filter((d) => d.state !== 'filtered').length;
    return `sent on to ${n} target${n === 1 ? '' : 's'}`;
  }
  return `no target took it: kept in ${event.queue} (${event.state})`;
}
