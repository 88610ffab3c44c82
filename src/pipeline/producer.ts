import type { UnreadableJob } from './errors';
import type { RedisClient } from '../redis/connect';
import type { EventType } from '../model/event-table';
import { keyDigest } from '../routing/ordering-key';
import { planDeliveries, type DeliveryPlan, type PlannedDelivery, type PlannedEvent } from '../routing/plan';
import { PARKED_AT_INGEST_MS } from '../ordering/park';
import type { Target } from '../model/target-schema';
import { EnqueueUnavailableError, isProgrammingError } from './errors';
import { jobIdFor } from '../model/ids';
import {
  defineIngestScript,
  type AddTo,
  type IngestDecision,
  type Ingestion,
  type ReplicaConfirmation,
} from './ingest-script';
import { deliveryJobOptions, type Retention } from '../model/job-options';
import type { EventJob, QuarantineJob, SeriesStart } from '../model/jobs';
import { expectationMatchField, ownKeys } from '../model/names';
import type { DeliveryQueue, EventQueue, QuarantineQueue } from '../model/queues';
import { requestIndexEntries } from './request-index';
import { withTimeout } from '../model/with-timeout';
import type { Evidence } from '../model/archive';
import { archiveRecordOf } from './archive-record';
import { createKeyPublisher } from './archive-keys';

/**
 * accepted: newly queued; replay: its replay key (nonce, or legacy signature) was accepted before;
 * duplicate: the same notification under a new replay key.
 */
export type EnqueueOutcome = 'accepted' | 'replay' | 'duplicate';

/**
 * What else an enqueue can find: the same event known under another `X-Merch-Id` (the first one's,
 * empty for none), nothing queued; or a legacy signature already bound to another event type, nothing
 * queued or bound.
 */
export type EnqueueRefusal =
  { kind: 'conflict'; firstMerchantId: string } | { kind: 'signature_reused'; boundTo: string };

export type EnqueueResult = EnqueueOutcome | EnqueueRefusal;

/**
 * The request_id an expectation of a notification would name (at its type's configured path), and what
 * to call when, as the notification is newly queued, the ingest script finds an expectation kept for
 * its environment, type and that request_id.
 */
export interface ExpectationProbe {
  requestId: string;
  found(): void;
}

const WAIT_MARGIN_MS = 250;

export interface ProducerSettings {
  prefix: string;
  /** @defaultValue 3000 */
  enqueueTimeoutMs: number;
  /** How long the same event id is recognised. @defaultValue 7 days */
  dedupWindowMs: number;
  /**
   * How long an accepted replay key is remembered: twice the timestamp tolerance, beyond which the
   * verifier refuses the request's timestamp anyway.
   */
  replayTtlMs: number;
  /**
   * Replicas that must confirm a write (WAIT) before it is acknowledged; fewer within the enqueue
   * timeout is a 503. @defaultValue 0
   */
  minReplicasAck: number;
  retention: Retention;
  /** Whether acknowledged notifications are appended to the archive stream (ARCHIVE_URL set). @defaultValue false */
  archive?: boolean;
}

export interface Producer {
  /**
   * One Redis script call (see ingest-script.ts): replay check and binding, de-duplication, one
   * delivery job per target that takes the event (or, when none does, the event job, kept for an
   * operator), and the request-id index.
   */
  enqueueEvent(job: EventJob, replayKey: string, evidence?: Evidence, probe?: ExpectationProbe): Promise<EnqueueResult>;
  /**
   * `bind: false` keeps a copy whose replay key is already bound elsewhere (a re-typed legacy
   * signature): the key is neither checked nor bound again. @defaultValue true
   * With the archive on, `evidence` (which key verified it) goes into its archive record.
   */
  enqueueQuarantine(
    job: QuarantineJob,
    replayKey: string,
    opts?: { bind?: boolean; evidence?: Evidence },
  ): Promise<EnqueueResult>;
  /**
   * Plans the event's deliveries among `targets` (see routing/plan.ts) and writes them, after the
   * receipt: the fan-out of an event no target took then, and a resend's new delivery (`firstSeries`).
   * One script call, like the receipt's, so an ordered delivery joins its key's sequence the same way;
   * the job id is the event id, so a retried fan-out never gives a target a second delivery. Returns
   * the plan (an empty one writes nothing).
   */
  addDeliveries(event: PlannedEvent, targets: readonly Target[], firstSeries?: SeriesStart): Promise<DeliveryPlan>;
}

export interface ProducerQueues {
  event(type: EventType): EventQueue;
  quarantine: QuarantineQueue;
  /** The target's delivery queue; undefined for a target that is not (or no longer) configured. */
  delivery(target: string): DeliveryQueue | undefined;
  /** The current targets (a reload changes them). */
  targets(): readonly Target[];
}

/** What the pipeline reports (the entry point counts it in the metrics and logs it). */
export interface PipelineObserver {
  /** An accepted event that this target's filter left out. */
  filtered?(target: string): void;
  /** An ordered target's dead letter was passed over (`onDeadLetter: skip`). */
  orderSkipped?(target: string, key: string, eventId: string): void;
  /** An ordered target's dead letter now holds back its key (`onDeadLetter: block`). */
  orderBlocked?(target: string, key: string, eventId: string): void;
  /**
   * The event lookup met a job it cannot read (see UnreadableJob): shown as such, or refused when nothing else holds
   * the event.
   */
  unreadableJob?(job: UnreadableJob): void;
}

/**
 * The producer: the only writer of event, quarantine and delivery jobs. Each notification is one Redis script call that
 * checks and binds its replay key, de-duplicates (by event id) and stores every job it needs, so there is never a
 * recognised-but-unqueued notification, no window between the replay decision and the adds, and no second job lifecycle
 * between receipt and delivery: the receiver fans out itself. Every call is bounded by `enqueueTimeoutMs` and fails
 * with EnqueueUnavailableError, so nothing is acknowledged unstored.
 */
export function createProducer(
  connection: RedisClient,
  settings: ProducerSettings,
  queues: ProducerQueues,
  observer: PipelineObserver = {},
): Producer {
  const ingest = defineIngestScript(connection);
  const archiveStream = settings.archive ? ownKeys.archive(settings.prefix) : undefined;
  const publishKey = settings.archive ? createKeyPublisher(connection, settings.prefix) : undefined;

  /** The ingestion's archive part: the record, when the archive is on and the caller knows the evidence. */
  function archiveOf(
    job: EventJob | QuarantineJob,
    evidence: Evidence | undefined,
    opts: Parameters<typeof archiveRecordOf>[2],
  ) {
    if (archiveStream === undefined || evidence === undefined) return undefined;
    publishKey?.(evidence.keyFingerprint, evidence.keyPem);
    return { stream: archiveStream, record: archiveRecordOf(job, evidence, opts) };
  }

  /** The script's add of one planned delivery: ordered ones join their key's sequence (parked unless first). */
  function addOf({ target, job }: PlannedDelivery, queue: DeliveryQueue): AddTo {
    const add = { name: job.eventType, data: job, opts: deliveryJobOptions(job.eventId, target, settings.retention) };
    const { orderKey } = job;
    if (orderKey === undefined) return { queue, job: add };
    return {
      queue,
      job: add,
      ordered: {
        sequenceKey: ownKeys.orderSequence(settings.prefix, target.name, keyDigest(orderKey)),
        parkMs: PARKED_AT_INGEST_MS,
      },
    };
  }

  /**
   * One delivery job per target the event is routed to (each recording the targets that filtered it
   * out, for the event view); the event job itself when none takes it, for the fan-out worker, which
   * records the filtered ones or keeps an event nobody subscribes to.
   */
  function addsFor(event: EventJob): { adds: AddTo[]; filtered: string[] } {
    const plan = planDeliveries(event, queues.targets());
    const adds: AddTo[] = [];
    for (const delivery of plan.deliveries) {
      const queue = queues.delivery(delivery.target.name);
      if (queue) adds.push(addOf(delivery, queue));
    }
    if (adds.length > 0) return { adds, filtered: plan.filtered };
    return {
      adds: [
        {
          queue: queues.event(event.eventType),
          job: { name: event.eventType, data: event, opts: { jobId: event.eventId } },
        },
      ],
      filtered: [],
    };
  }

  function bindingOf(data: EventJob | QuarantineJob, replayKey: string, bind = true): Ingestion['binding'] {
    const key = ownKeys.replay(settings.prefix, data.scheme, replayKey);
    if (!bind) return { key, none: true };
    return {
      key,
      value: data.eventType,
      ttlMs: settings.replayTtlMs,
      // The v1.2 string to sign has no path: one legacy signature would verify on all seven notify
      // paths, so it serves the first event type it arrived for only.
      exclusive: data.scheme === 'legacy',
    };
  }

  async function run(ingestion: Ingestion, waitUntilReady: () => Promise<unknown>) {
    // As queue.add does: wait for the queue's start-up only; afterwards a command while Redis is
    // down fails at once (no offline queue) instead of waiting, holding the body, to run late.
    const deadline = Date.now() + settings.enqueueTimeoutMs;
    const decision = await bounded(waitUntilReady().then(() => ingest(ingestion, confirmation(deadline))));
    if (decision.kind !== 'signature_reused') confirmReplicated(decision.replicas);
    return decision;
  }

  function refusalOf(decision: Exclude<IngestDecision, { kind: 'added' }>): EnqueueResult {
    if (decision.kind === 'conflict') return { kind: 'conflict', firstMerchantId: decision.firstMerchantId };
    if (decision.kind === 'signature_reused') return { kind: 'signature_reused', boundTo: decision.boundTo };
    return decision.kind;
  }

  async function enqueueEvent(
    event: EventJob,
    replayKey: string,
    evidence?: Evidence,
    probe?: ExpectationProbe,
  ): Promise<EnqueueResult> {
    const eventQueue = queues.event(event.eventType);
    const { adds, filtered } = addsFor(event);
    const ingestion: Ingestion = {
      adds,
      binding: bindingOf(event, replayKey),
      dedup: {
        key: ownKeys.dedup(settings.prefix, event.eventId),
        ttlMs: settings.dedupWindowMs,
        value: `m:${event.merchantId ?? ''}`,
        copiesKey: ownKeys.copies(settings.prefix, event.eventId),
      },
      eventId: event.eventId,
      index: requestIndexEntries(settings.prefix, event.payload, settings.dedupWindowMs, probe?.requestId),
      archive: archiveOf(event, evidence, { filtered }),
      ...(probe && {
        expectation: {
          key: ownKeys.expectationMatch(settings.prefix),
          field: expectationMatchField(event.environment, event.eventType, probe.requestId),
        },
      }),
    };
    const decision = await run(ingestion, () => eventQueue.waitUntilReady());
    if (decision.kind !== 'added') return refusalOf(decision);
    if (observer.filtered) for (const target of filtered) observer.filtered(target);
    if (decision.expected) probe?.found();
    return 'accepted';
  }

  async function enqueueQuarantine(
    data: QuarantineJob,
    replayKey: string,
    opts: { bind?: boolean; evidence?: Evidence } = {},
  ): Promise<EnqueueResult> {
    const jobId = jobIdFor(replayKey);
    // BullMQ's de-duplication in the quarantine queue decides: a quarantined notification keeps its
    // event id, and replaying it into delivery must not find it already known.
    const job = {
      name: data.eventType,
      data,
      opts: { jobId, deduplication: { id: data.eventId, ttl: settings.dedupWindowMs } },
    };
    const ingestion: Ingestion = {
      adds: [{ queue: queues.quarantine, job }],
      binding: bindingOf(data, replayKey, opts.bind),
      eventId: data.eventId,
      archive: archiveOf(data, opts.evidence, { quarantineJobId: jobId }),
    };
    const decision = await run(ingestion, () => queues.quarantine.waitUntilReady());
    if (decision.kind !== 'added') return refusalOf(decision);
    return decision.jobId === jobId ? 'accepted' : 'duplicate';
  }

  async function addDeliveries(
    event: PlannedEvent,
    targets: readonly Target[],
    firstSeries?: SeriesStart,
  ): Promise<DeliveryPlan> {
    const plan = planDeliveries(event, targets, firstSeries);
    const adds = plan.deliveries.map((delivery) => {
      const queue = queues.delivery(delivery.target.name);
      if (!queue) throw new Error(`no delivery queue for target ${delivery.target.name}`);
      return addOf(delivery, queue);
    });
    const first = adds[0];
    if (!first) return plan;
    // Nothing to bind or de-duplicate: the script is given a key of the event's own (never read) in the binding's
    // place.
    const ingestion: Ingestion = {
      adds,
      binding: { key: ownKeys.dedup(settings.prefix, event.eventId), none: true },
      eventId: event.eventId,
    };
    await run(ingestion, () => first.queue.waitUntilReady());
    return plan;
  }

  /**
   * Acknowledging a write only the master holds would lose it if the master died before passing it
   * on, so with minReplicasAck ≥ 1 the replicas must confirm it (WAIT) within what is left of the
   * enqueue timeout. WAIT gives up before the overall bound, so a shortfall is reported as one, not
   * as a timeout: Redis checks a blocked client's timeout when its loop wakes (every 100 ms at hz 10).
   */
  function confirmation(deadline: number): ReplicaConfirmation | undefined {
    if (settings.minReplicasAck === 0) return undefined;
    const margin = Math.min(WAIT_MARGIN_MS, settings.enqueueTimeoutMs / 4);
    return {
      replicas: settings.minReplicasAck,
      timeoutMs: deadline - Date.now() - margin,
      markerKey: ownKeys.replicaMarker(settings.prefix),
    };
  }

  function confirmReplicated(replicas: number | undefined): void {
    if (settings.minReplicasAck === 0 || (replicas ?? 0) >= settings.minReplicasAck) return;
    throw new EnqueueUnavailableError(
      `only ${replicas ?? 0} of ${settings.minReplicasAck} replicas confirmed the write within ` +
        `${settings.enqueueTimeoutMs} ms`,
      { reason: 'replicas' },
    );
  }

  function bounded<T>(promise: Promise<T>): Promise<T> {
    const ms = settings.enqueueTimeoutMs;
    return withTimeout(promise, ms, () => new EnqueueUnavailableError(`Redis did not confirm within ${ms} ms`)).catch(
      (err: Error) => {
        promise.catch(() => undefined);
        if (err instanceof EnqueueUnavailableError || isProgrammingError(err)) throw err;
        throw new EnqueueUnavailableError(`Redis refused: ${err.message}`, { cause: err });
      },
    );
  }

  return { enqueueEvent, enqueueQuarantine, addDeliveries };
}
