import {
  Counter,
  Histogram,
  Registry,
  collectDefaultMetrics,
  type LabelValues,
  type RegistryContentType,
} from 'prom-client';
import { EVENT_TYPES, type EventType } from '../model/event-table';
import type { PipelineObserver } from '../pipeline/producer';
import type { Logger } from '../logging/logger';

/**
 * `conflict`: a copy of a known event under another `X-Merch-Id`; `not_accepted`: its environment's
 * acceptance rule left it out. Both are acknowledged and forwarded nowhere.
 */
export type NotificationOutcome =
  'accepted' | 'replay' | 'duplicate' | 'rejected' | 'quarantined' | 'unavailable' | 'conflict' | 'not_accepted';

/** The outcomes of a verified notification, which belongs to the environment whose key verified it. */
export type VerifiedOutcome = Exclude<NotificationOutcome, 'rejected'>;

const VERIFIED_OUTCOMES: readonly VerifiedOutcome[] = [
  'accepted',
  'replay',
  'duplicate',
  'quarantined',
  'unavailable',
  'conflict',
  'not_accepted',
];

interface OutcomeSeries {
  count: Counter.Internal;
  latency: Histogram.Internal<'event_type' | 'outcome'>;
}

/** One event type's series of one platform environment: each outcome (reason ''), and quarantines by reason. */
export interface EnvironmentSeries {
  outcome: Readonly<Record<VerifiedOutcome, OutcomeSeries>>;
  /** A quarantine for another reason than an invalid body (`signature_reused`), resolved on first use. */
  quarantined(reason: string): Counter.Internal;
}

/**
 * One event type's receiver series, resolved once rather than by label values per request: the
 * counter of each rejection reason (no environment: the signature decides that) and the rejections'
 * latency, each environment's outcomes (resolved on first use, from the configured names), and the
 * enqueue failure counters.
 */
export interface EventTypeSeries {
  rejected(reason: string): Counter.Internal;
  rejectedLatency: Histogram.Internal<'event_type' | 'outcome'>;
  environment(name: string): EnvironmentSeries;
  enqueueFailure: Counter.Internal;
  replicaShortfall: Counter.Internal;
}

/**
 * One target's delivery series on the success path, resolved once per target and event type rather
 * than by label values per delivery: the 'delivered' counter and the receipt-to-delivery latency.
 */
export interface TargetSeries {
  delivered(type: string): Counter.Internal;
  latency: Histogram.Internal<'target'>;
}

/**
 * prom-client's default gauges named like counters: Prometheus's own checker (`promtool check
 * metrics`) refuses a gauge ending in `_total`. Each is the sum of a gauge kept beside it
 * (`nodejs_active_handles` by `type`, …), so nothing is lost without them.
 */
const DEFAULT_GAUGES_NAMED_LIKE_COUNTERS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

export interface MetricsOptions {
  /**
   * The latency histograms keep the trace id of an observation as its exemplar (`trace_id`), and
   * `/metrics` speaks OpenMetrics, the text format that carries exemplars. On while tracing is.
   * @defaultValue false
   */
  exemplars?: boolean;
}

/**
 * The receiver's Prometheus series. Label values come from the event table and fixed enums, never
 * from request data, so a caller cannot grow the series count.
 */
export function createMetrics(
  registry = new Registry(),
  withDefaults = true,
  { exemplars = false }: MetricsOptions = {},
) {
  // The admin port answers in the registry's content type, whichever it is.
  if (exemplars) (registry as Registry<RegistryContentType>).setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
  if (withDefaults) {
    collectDefaultMetrics({ register: registry });
    for (const name of DEFAULT_GAUGES_NAMED_LIKE_COUNTERS) registry.removeSingleMetric(name);
  }
  const notifications = new Counter({
    name: 'webhook_notifications_total',
    help: 'Notifications received, by event type, outcome, rejection or quarantine reason, and platform environment',
    labelNames: ['event_type', 'outcome', 'reason', 'environment'] as const,
    registers: [registry],
  });
  const ackLatency = new Histogram({
    name: 'webhook_ack_latency_seconds',
    help: 'Time from request start to the acknowledgement being sent',
    labelNames: ['event_type', 'outcome'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 3, 5],
    registers: [registry],
    enableExemplars: exemplars,
  });
  const enqueueFailures = new Counter({
    name: 'webhook_enqueue_failures_total',
    help: 'Verified notifications answered 503 because Redis did not confirm the job',
    labelNames: ['event_type'] as const,
    registers: [registry],
  });
  const replicaShortfalls = new Counter({
    name: 'webhook_replica_ack_shortfalls_total',
    help: 'Notifications answered 503 because fewer replicas than REDIS_MIN_REPLICAS_ACK confirmed the write in time',
    labelNames: ['event_type'] as const,
    registers: [registry],
  });
  const deliveries = new Counter({
    name: 'webhook_deliveries_total',
    help:
      'Delivery attempts to targets, by target and outcome (delivered, retry, dead_lettered, dropped by the ' +
      "target's transform)",
    labelNames: ['target', 'event_type', 'outcome'] as const,
    registers: [registry],
  });
  const deliveryLatency = new Histogram({
    name: 'webhook_delivery_latency_seconds',
    help: 'Time from receipt of the notification to its delivery to the target',
    labelNames: ['target'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 120, 600, 3600],
    registers: [registry],
    enableExemplars: exemplars,
  });
  const deadLetters = new Counter({
    name: 'webhook_dead_letters_total',
    help: 'Deliveries dead-lettered after their last attempt or a permanent failure',
    labelNames: ['target'] as const,
    registers: [registry],
  });
  const unrouted = new Counter({
    name: 'webhook_unrouted_events_total',
    help: 'Events no target subscribes to (kept as failed jobs of their event queue)',
    labelNames: ['event_type'] as const,
    registers: [registry],
  });
  const filtered = new Counter({
    name: 'webhook_filtered_total',
    help: 'Events of a type a target subscribes to that its filter left out (no delivery to it)',
    labelNames: ['target'] as const,
    registers: [registry],
  });
  const orderingSkips = new Counter({
    name: 'webhook_ordering_skipped_total',
    help:
      'Dead-lettered deliveries of an ordered target passed over (onDeadLetter: skip), so later deliveries of ' +
      'their key went on',
    labelNames: ['target'] as const,
    registers: [registry],
  });
  const fanoutFailures = new Counter({
    name: 'webhook_fanout_failures_total',
    help: 'Events whose fan-out to delivery queues failed every attempt (kept as failed jobs of their event queue)',
    labelNames: ['event_type'] as const,
    registers: [registry],
  });
  const portRefusals = new Counter({
    name: 'webhook_public_port_refusals_total',
    help:
      'Connections and requests refused by the public port before any route saw them (malformed, timed out, over ' +
      'the connection cap)',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const clientAborts = new Counter({
    name: 'webhook_client_aborts_total',
    help:
      'Connections the client reset or closed mid-request, by phase (request: before or between requests; body: ' +
      'while its body was read; response: while its answer was prepared)',
    labelNames: ['phase'] as const,
    registers: [registry],
  });
  const expectations = new Counter({
    name: 'webhook_expectations_total',
    help:
      'Expected notifications, by what became of them: created, met, overdue, overdue_without_inquiry (no inquiry ' +
      'endpoint or none configured), missing_notification (the platform says final, no notification came), ' +
      'unresolved, cancelled, late_notification (arrived after it settled without it)',
    labelNames: ['event_type', 'environment', 'outcome'] as const,
    registers: [registry],
  });
  const inquiries = new Counter({
    name: 'webhook_inquiries_total',
    help:
      'Inquiries to the platform about overdue expectations, by outcome: final, not_final, refused (the answer ' +
      'was not believed), failed (no usable answer)',
    labelNames: ['event_type', 'environment', 'outcome'] as const,
    registers: [registry],
  });
  const inquiryRefusals = new Counter({
    name: 'webhook_inquiry_answers_refused_total',
    help:
      'Answers to inquiries not believed, by reason: unsigned, malformed, bad_signature, stale (timestamp ' +
      'outside the window), replayed (nonce seen before)',
    labelNames: ['environment', 'reason'] as const,
    registers: [registry],
  });
  const environmentSeries = (type: EventType, environment: string): EnvironmentSeries => {
    const quarantines = new Map<string, Counter.Internal>();
    const outcome = Object.fromEntries(
      VERIFIED_OUTCOMES.map((o) => [
        o,
        { count: notifications.labels(type, o, '', environment), latency: ackLatency.labels(type, o) },
      ]),
    ) as Record<VerifiedOutcome, OutcomeSeries>;
    // Zero-initialised so dashboards show every event type of every environment from the start.
    outcome.accepted.count.inc(0);
    return {
      outcome,
      quarantined(reason) {
        let counter = quarantines.get(reason);
        if (counter === undefined) {
          counter = notifications.labels(type, 'quarantined', reason, environment);
          quarantines.set(reason, counter);
        }
        return counter;
      },
    };
  };
  const eventTypeSeries = (type: EventType): EventTypeSeries => {
    const rejections = new Map<string, Counter.Internal>();
    const environments = new Map<string, EnvironmentSeries>();
    return {
      rejected(reason) {
        let counter = rejections.get(reason);
        if (counter === undefined) {
          counter = notifications.labels(type, 'rejected', reason, '');
          rejections.set(reason, counter);
        }
        return counter;
      },
      rejectedLatency: ackLatency.labels(type, 'rejected'),
      environment(name) {
        let series = environments.get(name);
        if (series === undefined) {
          series = environmentSeries(type, name);
          environments.set(name, series);
        }
        return series;
      },
      enqueueFailure: enqueueFailures.labels(type),
      replicaShortfall: replicaShortfalls.labels(type),
    };
  };
  const byEventType = new Map<EventType, EventTypeSeries>(EVENT_TYPES.map((type) => [type, eventTypeSeries(type)]));
  for (const series of byEventType.values()) {
    series.enqueueFailure.inc(0);
    series.replicaShortfall.inc(0);
  }
  return {
    registry,
    notifications,
    portRefusals,
    clientAborts,
    ackLatency,
    enqueueFailures,
    replicaShortfalls,
    deliveries,
    deliveryLatency,
    deadLetters,
    unrouted,
    filtered,
    orderingSkips,
    fanoutFailures,
    expectations,
    inquiries,
    inquiryRefusals,
    /** A delivery worker's series of one target (see TargetSeries). */
    target(name: string): TargetSeries {
      const delivered = new Map<string, Counter.Internal>();
      return {
        delivered(type) {
          let series = delivered.get(type);
          if (series === undefined) {
            series = deliveries.labels(name, type, 'delivered');
            delivered.set(type, series);
          }
          return series;
        },
        latency: deliveryLatency.labels(name),
      };
    },
    /**
     * A traced notification's acknowledgement latency, with its trace id as the exemplar when
     * exemplars are on (the untraced path observes through its resolved series instead).
     */
    observeAck(eventType: EventType, outcome: NotificationOutcome, seconds: number, traceId: string): void {
      if (exemplars)
        ackLatency.observe({
          labels: { event_type: eventType, outcome },
          value: seconds,
          exemplarLabels: exemplarOf(traceId),
        });
      else ackLatency.labels(eventType, outcome).observe(seconds);
    },
    /** A traced delivery's receipt-to-delivery latency, with its trace id as the exemplar when exemplars are on. */
    observeDelivery(target: string, seconds: number, traceId: string): void {
      if (exemplars)
        deliveryLatency.observe({ labels: { target }, value: seconds, exemplarLabels: exemplarOf(traceId) });
      else deliveryLatency.labels(target).observe(seconds);
    },
    /**
     * Zero-initialises the expectation outcomes that alerts watch, for every event type of these
     * environments: `increase()` sees the first one only when the series existed before it.
     */
    expectationOutcomes(names: readonly string[]): void {
      for (const type of EVENT_TYPES)
        for (const name of names)
          for (const outcome of ['missing_notification', 'overdue_without_inquiry', 'unresolved'])
            expectations.labels(type, name, outcome).inc(0);
    },
    /**
     * Resolves (and zero-initialises) every event type's series of these environments, so each shows from the start.
     */
    environments(names: readonly string[]): void {
      for (const series of byEventType.values()) for (const name of names) series.environment(name);
    },
    /** The receiver's series of one event type, resolved once (see EventTypeSeries). */
    eventType(type: EventType): EventTypeSeries {
      const series = byEventType.get(type);
      if (series === undefined) throw new Error(`unknown event type ${type}`);
      return series;
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

/** An exemplar's labels; prom-client types them as the metric's own labels, which they need not be. */
function exemplarOf<T extends string>(traceId: string): LabelValues<T> {
  return { trace_id: traceId } as LabelValues<string> as LabelValues<T>;
}

/**
 * What the pipeline reports, counted and logged: filtered targets (webhook_filtered_total),
 * ordered deliveries whose dead letter was skipped (webhook_ordering_skipped_total) or blocks its
 * key, and jobs the event lookup cannot read.
 */
export function ingestObserver(
  metrics: Pick<Metrics, 'filtered' | 'orderingSkips'>,
  logger?: Pick<Logger, 'warn' | 'repeated'>,
): PipelineObserver {
  return {
    filtered: (target) => metrics.filtered.labels(target).inc(),
    orderSkipped(target, key, eventId) {
      metrics.orderingSkips.labels(target).inc();
      logger?.warn('ordered delivery skipped a dead letter: later deliveries of its key go on', {
        target,
        orderKey: key,
        eventId,
      });
    },
    orderBlocked(target, key, eventId) {
      logger?.warn(
        'ordered delivery blocked: a dead letter holds back later deliveries of its key until it is replayed, ' +
          'discarded or released',
        { target, orderKey: key, eventId },
      );
    },
    // Throttled: the console's event page refreshes itself.
    unreadableJob: ({ queue, id, reason }) =>
      logger?.repeated('warn', `unreadable job:${queue}:${id}`, 'job unreadable', { queue, jobId: id, reason }),
  };
}
