import type { ExpectationSettings } from '../config/api-schema';
import type { Logger } from '../logging/logger';
import type { EventType } from '../model/event-table';
import type { Metrics } from '../monitoring/metrics';
import type { ExpectedNotifications } from '../receiving/receive';
import type { Arrival, ExpectationStore } from './store';

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
 * What the receiver asks and tells of notifications: the request_id an expectation of each would name,
 * which the ingest script looks up with the notification's own write; and, for a notification newly
 * queued that an expectation is kept for, the expectation is met (or, when it already settled without
 * it, the notification is noted as late). That runs after the acknowledgement's write; a failure is
 * logged, and the expectation's inquiry is then the net.
 */
export function expectedNotifications(
  store: Pick<ExpectationStore, 'arrived'>,
  settings: Pick<ExpectationSettings, 'requestIdPaths'>,
  metrics: Metrics,
  logger: Logger,
  clock: () => number = Date.now,
): ExpectedNotifications {
  return {
    requestIdOf: (eventType, payload) => requestIdAt(payload, requestIdPathOf(settings, eventType)),
    arrived: ({ eventId, eventType, environment, requestId }) => {
      store.arrived(environment, eventType, requestId, eventId, clock()).then(
        (found) => reportArrival(metrics, logger, found, { eventId, eventType, environment, requestId }),
        (err: Error) =>
          logger.repeated(
            'error',
            'expectation-arrival',
            'could not mark an expectation met (its inquiry will still ask)',
            { eventId, error: err.message },
          ),
      );
    },
  };
}

/** Counts and logs what a notification did to its expectation: met it, or came after it settled without it. */
export function reportArrival(
  metrics: Metrics,
  logger: Logger,
  found: Arrival | undefined,
  arrival: { eventId: string; eventType: EventType; environment: string; requestId: string },
): void {
  if (!found || found.outcome === 'none') return;
  const line = { expectationId: found.id, ...arrival };
  if (found.outcome === 'met') {
    metrics.expectations.labels(arrival.eventType, arrival.environment, 'met').inc();
    logger.info('expected notification arrived', { ...line, was: found.previous });
  } else {
    metrics.expectations.labels(arrival.eventType, arrival.environment, 'late_notification').inc();
    logger.warn('notification arrived after its expectation settled without it', { ...line, was: found.previous });
  }
}
