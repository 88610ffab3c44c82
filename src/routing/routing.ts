import { compileFilter, type EventFilter, type FilterTest } from '../model/filter';
import { takesEnvironment } from '../model/environments';
import { subscribes, type Target } from '../model/target-schema';

/** Which targets get an event: those it is delivered to, and those subscribed whose filter left it out. */
export interface Routing {
  deliver: Target[];
  filtered: Target[];
}

// Keyed by the target object, which a configuration load creates once: each filter is compiled once
// per loaded (or reloaded) configuration, not per event, and goes away with that configuration.
const compiled = new WeakMap<Target, FilterTest>();

function testOf(target: Target, filter: EventFilter): FilterTest {
  let test = compiled.get(target);
  if (!test) compiled.set(target, (test = compileFilter(filter)));
  return test;
}

/**
 * What a filter sees: the platform's body with `merchantId` set to the `X-Merch-Id` header's value
 * (absent without the header). A body's own `merchantId` never shows through, so a body cannot
 * claim a sub-merchant that its header did not.
 */
export function filterDocument(payload: unknown, merchantId: string | undefined): Record<string, unknown> {
  const { merchantId: _fromBody, ...body } =
    typeof payload === 'object' && payload !== null && !Array.isArray(payload)
      ? (payload as Record<string, unknown>)
      : {};
  return merchantId === undefined ? body : { ...body, merchantId };
}

/** What routing reads of an event. */
export interface RoutedEvent {
  eventType: string;
  payload: unknown;
  merchantId?: string;
  /** The platform environment whose key verified it. */
  environment: string;
}

/**
 * The one answer to "which targets get this event": the targets subscribed to its type and taking
 * its environment, split by their filter. An event with subscribers but no `deliver` is routed
 * (every subscriber chose not to take it), unlike one with no subscriber at all.
 */
export function routeEvent(
  targets: readonly Target[],
  { eventType, payload, merchantId, environment }: RoutedEvent,
): Routing {
  const routing: Routing = { deliver: [], filtered: [] };
  let document: Record<string, unknown> | undefined;
  for (const target of targets) {
    if (!subscribes(target, eventType) || !takesEnvironment(target, environment)) continue;
    const { filter } = target;
    if (filter === undefined) {
      routing.deliver.push(target);
      continue;
    }
    document ??= filterDocument(payload, merchantId);
    (testOf(target, filter)(document) ? routing.deliver : routing.filtered).push(target);
  }
  return routing;
}
