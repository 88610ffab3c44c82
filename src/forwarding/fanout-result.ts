import type { FanoutResult } from '../model/jobs';

/**
 * The fan-out step's return value (the event job's `returnvalue`): the targets given a delivery job,
 * and the subscribed targets whose filter left the event out. The event view reads `filtered` from
 * here, since a filtered target has no delivery job to show.
 */
export interface RoutedFanoutResult extends FanoutResult {
  filtered: string[];
}

/** The filtered targets recorded in an event job's return value; none for one fanned out before filters existed. */
export function filteredTargetsOf(returnvalue: unknown): string[] {
  if (typeof returnvalue !== 'object' || returnvalue === null || !('filtered' in returnvalue)) return [];
  const { filtered } = returnvalue;
  return Array.isArray(filtered) ? filtered.filter((t): t is string => typeof t === 'string') : [];
}
