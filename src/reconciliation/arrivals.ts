import type { ExpectationSettings } from '../config/api-schema';
import type { Logger } from '../logging/logger';
import type { EventType } from '../model/event-table';
import type { Metrics } from '../monitoring/metrics';
import type { Arrival } from '../receiving/receive';
import type { ExpectationStore } from './store';

const DEFAULT_REQUEST_ID_PATH = 'data.request_id';

/** The request_id a body carries at a dotted path (`data.request_id` unless configured for its type). */
export function requestIdAt(payload: unknown, dotted: string): string | undefined {
  let node: unknown = payload;
  for (const key of dotted.split('.')) {
    if (typeof node !== 'object' || node === null || Array.isArray(node)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return typeof node === 'string' && node.length > 0 && node.length <= 200 ? node : undefined;
}

export function requestIdPathOf(settings: Pick<ExpectationSettings, 'requestIdPaths'>, type: EventType): string {
  return settings.requestIdPaths[type] ?? DEFAULT_REQUEST_ID_PATH;
}

/**
 * What the receiver tells of each notification newly queued: the expectation it meets, if any, is
 * met (or, when it already settled without it, the notification is noted as late). Runs after the
 * acknowledgement's write; a failure is logged, and the expectation's inquiry is then the net.
 */
export function expectationArrivals(
  store: Pick<ExpectationStore, 'arrived'>,
  settings: Pick<ExpectationSettings, 'requestIdPaths'>,
  metrics: Metrics,
  logger: Logger,
  clock: () => number = Date.now,
): (arrival: Arrival) => void {
  return ({ eventId, eventType, environment, payload }) => {
    const requestId = requestIdAt(payload, requestIdPathOf(settings, eventType));
    if (requestId === undefined) return;
    store.arrived(environment, eventType, requestId, eventId, clock()).then(
      (found) => {
        if (!found || found.outcome === 'none') return;
        const line = { expectationId: found.id, eventId, eventType, environment, requestId };
        if (found.outcome === 'met') {
          metrics.expectations.labels(eventType, environment, 'met').inc();
          logger.info('expected notification arrived', { ...line, was: found.previous });
        } else {
          metrics.expectations.labels(eventType, environment, 'late_notification').inc();
          logger.warn('notification arrived after its expectation settled without it', {
            ...line,
            was: found.previous,
          });
        }
      },
      (err: Error) =>
        logger.repeated(
          'error',
          'expectation-arrival',
          'could not mark an expectation met (its inquiry will still ask)',
          {
            eventId,
            error: err.message,
          },
        ),
    );
  };
}
