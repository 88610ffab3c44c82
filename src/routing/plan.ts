import { toDeliveryJob, type DeliveryFields, type DeliveryJob, type SeriesStart } from '../model/jobs';
import type { Target } from '../model/target-schema';
import { orderingKeyOf } from './ordering-key';
import { routeEvent } from './routing';

/**
 * What planning reads of an event: the fields every delivery job carries, and the payload routing and ordering read.
 */
export type PlannedEvent = DeliveryFields & { payload: unknown };

/** One delivery job to write, for the target it goes to. */
export interface PlannedDelivery {
  target: Target;
  job: DeliveryJob;
}

/** An event's deliveries, and the subscribed targets whose filter left it out. */
export interface DeliveryPlan {
  deliveries: PlannedDelivery[];
  filtered: string[];
}

/**
 * The one answer to "which delivery jobs does this event get": one per target it is routed to (see
 * routeEvent), each recording the targets that filtered it out (for the event view) and, for a target
 * with ordered delivery, the event's ordering key. The receiver, the fan-out worker and a resend all
 * plan here, so a delivery is ordered or unordered by the same rule whoever writes it.
 * `firstSeries` marks a delivery a resend adds.
 */
export function planDeliveries(
  event: PlannedEvent,
  targets: readonly Target[],
  firstSeries?: SeriesStart,
): DeliveryPlan {
  const routing = routeEvent(targets, event);
  const filtered = routing.filtered.map((t) => t.name);
  const deliveries: PlannedDelivery[] = [];
  for (const target of routing.deliver) {
    const job = toDeliveryJob(event, target.name, filtered, orderingKeyOf(target, event.payload, event.merchantId));
    if (firstSeries) job.firstSeries = firstSeries;
    deliveries.push({ target, job });
  }
  return { deliveries, filtered };
}
