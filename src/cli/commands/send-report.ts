import type { DeliveryView, EventView } from '../../operations/event-lookup';

/** How long `send` waits for the admin API to know an acknowledged event (it is stored before the 200). */
const ASK_FOR_MS = 5000;

/** Where to ask what became of a sent notification: the admin port's base URL and its token. */
export interface AdminAsk {
  url: string;
  token?: string;
}

function deliveryText(d: DeliveryView): string {
  return `${d.target} ${d.state === 'completed' ? 'delivered' : d.state}`;
}

/** What became of an event, in one line: routed (each target's state), quarantined with the reason, or its state. */
export function outcomeLine(event: EventView): string {
  if (event.quarantineReason !== undefined)
    return `quarantined: ${event.quarantineReason}${event.errors?.length ? ` (${event.errors.join('; ')})` : ''}`;
  if (event.state === 'routed') return `routed: ${event.deliveries.map(deliveryText).join(', ')}`;
  const filtered = event.deliveries.filter((d) => d.state === 'filtered');
  if (filtered.length) return `routed: ${filtered.map(deliveryText).join(', ')} (no target takes it)`;
  return `not routed: ${event.state} in ${event.queue} (no target takes it yet)`;
}

/** Asks the admin API for the event, until it knows it or ASK_FOR_MS has passed; the line to print. */
export async function askOutcome(admin: AdminAsk, eventId: string): Promise<string> {
  const url = new URL(`/admin/api/events/${encodeURIComponent(eventId)}`, admin.url);
  const headers = admin.token ? { authorization: `Bearer ${admin.token}` } : undefined;
  const until = Date.now() + ASK_FOR_MS;
  for (;;) {
    const res = await fetch(url, { headers });
    if (res.ok) return outcomeLine((await res.json()) as EventView);
    if (res.status !== 404 || Date.now() > until)
      return `the admin API answered ${res.status} for event ${eventId}: ${(await res.text()).slice(0, 200)}`;
    await res.body?.cancel();
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
