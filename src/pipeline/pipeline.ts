import type { Job, Queue } from 'bullmq';
import type { RedisClient } from '../redis/connect';
import type { Config } from '../config/schema';
import type { EventType } from '../events/table';
import type { Target } from '../forwarding/target-schema';
import { createIngest, type Ingest, type IngestObserver } from './ingest';
import { deliveryJobOptions, eventJobOptions, type Retention } from './job-options';
import { toDeliveryJob, type DeliveryJob, type EventJob, type QuarantineJob } from './jobs';
import { isEventId } from './ids';
import { keyPrefix, ownKeys } from './names';
import { eventIdsForRequest } from './request-index';
import { createSequencer, type Sequencer } from '../ordering/sequencer';
import { openDeliveryQueue, openEventQueues, openQuarantineQueue, type DeliveryQueue, type EventQueue, type QuarantineQueue } from './queues';

export interface PipelineOptions {
  /** Key prefix of every queue and of our own keys. @defaultValue `whr` */
  prefix: string;
  /** How long an add may take before the notification is answered 503. @defaultValue 3000 */
  enqueueTimeoutMs: number;
  /** How long the same event id is recognised (and the request-id index kept). @defaultValue 7 days */
  dedupWindowMs: number;
  retention: Retention;
  /** How long an accepted replay key (nonce, legacy signature) is remembered: twice the timestamp tolerance. */
  replayTtlMs: number;
  /** Replicas that must confirm each ingest write (WAIT) before it is acknowledged. @defaultValue 0 */
  minReplicasAck: number;
  /** The targets at start, each with a delivery queue ({@link Pipeline.setTargets} changes them later). */
  targets: readonly Target[];
}

export function pipelineOptions(config: Config): PipelineOptions {
  return {
    prefix: keyPrefix(config.queuePrefix),
    enqueueTimeoutMs: config.enqueueTimeoutMs,
    dedupWindowMs: config.dedupWindowMs,
    retention: config.retention,
    replayTtlMs: 2 * config.timestampToleranceMs,
    minReplicasAck: config.redisMinReplicasAck,
    targets: config.targets,
  };
}

/**
 * An event found by its id: a job that holds it. One of its delivery jobs (a routed event has no job
 * of its own), its event job (no target took it), or its quarantine job.
 */
export type FoundEvent =
  | { kind: 'delivery'; queue: DeliveryQueue; job: Job<DeliveryJob, unknown, EventType> }
  | { kind: 'event'; queue: EventQueue; job: Job<EventJob, unknown, EventType> }
  | { kind: 'quarantine'; queue: QuarantineQueue; job: Job<QuarantineJob, unknown, EventType> };

/**
 * Every queue of the service, the job options that go with them and the look-ups over them, on one
 * connection. Built once per process by the entry point and handed to the receiver, the workers,
 * the admin API, the CLI and metrics; nothing else opens a queue or builds job options.
 */
export interface Pipeline extends Ingest {
  readonly prefix: string;
  /** The connection the queues share; our own keys (legacy binding, request index) use it too. */
  readonly redis: RedisClient;
  readonly options: PipelineOptions;
  eventQueue(type: EventType): EventQueue;
  eventQueues(): EventQueue[];
  readonly quarantine: QuarantineQueue;
  /** The target's delivery queue; undefined when no such target is configured. */
  deliveryQueue(target: string): DeliveryQueue | undefined;
  /** [target name, its queue] for every current target. */
  deliveryQueues(): [string, DeliveryQueue][];
  /** Every queue: events, quarantine, deliveries (for summaries, metrics and the dashboard). */
  allQueues(): Queue[];
  /** The current targets. */
  targets(): readonly Target[];
  /** Opens the queues of new targets and closes those of removed ones (jobs stay in Redis). */
  setTargets(targets: readonly Target[]): Promise<void>;
  /**
   * Gives each target one delivery job for the event; the job id is the event id, so a retried
   * fan-out never gives a target a second one.
   */
  addDeliveries(event: EventJob, targets: readonly Target[]): Promise<void>;
  /** A job holding the event (a delivery job first), while the retention settings keep one. */
  findEvent(eventId: string): Promise<FoundEvent | undefined>;
  /** Whether the event was received within the de-duplication window, even if no job holds it any more. */
  isKnown(eventId: string): Promise<boolean>;
  /** The ordered delivery of a target with `order` (its keys' sequences); undefined for any other. */
  ordering(target: string): Sequencer | undefined;
  eventIdsForRequest(requestId: string): Promise<string[]>;
  /** Closes the queues; the connection is the caller's. */
  close(): Promise<void>;
}

export function createPipeline(connection: RedisClient, options: PipelineOptions, observer: IngestObserver = {}): Pipeline {
  const { prefix } = options;
  const eventOptions = eventJobOptions(options.retention);
  const events = openEventQueues(connection, prefix, eventOptions);
  const quarantine = openQuarantineQueue(connection, prefix, eventOptions);
  const deliveries = new Map<string, DeliveryQueue>();
  let targets: readonly Target[] = [];

  const eventQueue = (type: EventType): EventQueue => {
    const queue = events.get(type);
    if (!queue) throw new Error(`no queue for event type ${type}`);
    return queue;
  };
  const ingest = createIngest(connection, options, {
    event: eventQueue,
    quarantine,
    delivery: (target) => deliveries.get(target),
    targets: () => targets,
  }, observer);

  /** Opens queues for new targets at once; returns the queues of removed ones, for the caller to close. */
  function applyTargets(next: readonly Target[]): DeliveryQueue[] {
    const names = new Set(next.map((t) => t.name));
    const removed = [...deliveries].filter(([name]) => !names.has(name));
    for (const [name] of removed) deliveries.delete(name);
    for (const t of next) if (!deliveries.has(t.name)) deliveries.set(t.name, openDeliveryQueue(connection, prefix, t.name));
    targets = next;
    return removed.map(([, queue]) => queue);
  }
  applyTargets(options.targets);

  // One per loaded target object: a reload that changes a target gets a sequencer with its settings.
  const sequencers = new WeakMap<Target, Sequencer>();
  function ordering(name: string): Sequencer | undefined {
    const target = targets.find((t) => t.name === name);
    if (!target?.order) return undefined;
    let sequencer = sequencers.get(target);
    if (!sequencer) {
      sequencer = createSequencer(target, connection, prefix, () => deliveries.get(name), {
        skipped: (key, eventId) => observer.orderSkipped?.(name, key, eventId),
        blocked: (key, eventId) => observer.orderBlocked?.(name, key, eventId),
      });
      sequencers.set(target, sequencer);
    }
    return sequencer;
  }

  return {
    ...ingest,
    prefix,
    redis: connection,
    options,
    eventQueue,
    eventQueues: () => [...events.values()],
    quarantine,
    deliveryQueue: (target) => deliveries.get(target),
    deliveryQueues: () => [...deliveries],
    allQueues: () => [...events.values(), quarantine, ...deliveries.values()],
    targets: () => targets,
    async setTargets(next) {
      await Promise.all(applyTargets(next).map((q) => q.close()));
    },
    async addDeliveries(event, to) {
      await Promise.all(
        to.map((target) => {
          const queue = deliveries.get(target.name);
          if (!queue) throw new Error(`no delivery queue for target ${target.name}`);
          return queue.add(event.eventType, toDeliveryJob(event, target.name), deliveryJobOptions(event.eventId, target, options.retention));
        }),
      );
    },
    async findEvent(eventId) {
      if (!isEventId(eventId)) return undefined;
      for (const queue of deliveries.values()) {
        const job = await queue.getJob(eventId);
        if (job) return { kind: 'delivery', queue, job };
      }
      for (const queue of events.values()) {
        // Unrouted events have the event id as job id; the earlier layout's through BullMQ's record.
        const job = (await queue.getJob(eventId)) ?? (await jobByDeduplicationId(queue, eventId));
        if (job) return { kind: 'event', queue, job };
      }
      const job = await jobByDeduplicationId(quarantine, eventId);
      return job ? { kind: 'quarantine', queue: quarantine, job } : undefined;
    },
    ordering,
    async isKnown(eventId) {
      if ((await connection.exists(ownKeys.dedup(prefix, eventId))) > 0) return true;
      for (const queue of [...events.values(), quarantine]) if (await queue.getDeduplicationJobId(eventId)) return true;
      return false;
    },
    eventIdsForRequest: (requestId) => eventIdsForRequest(connection, prefix, requestId, options.dedupWindowMs),
    async close() {
      await Promise.all([...events.values(), quarantine, ...deliveries.values()].map((q) => q.close()));
    },
  };
}

interface DeduplicatingQueue<J> {
  getDeduplicationJobId(id: string): Promise<string | null>;
  getJob(id: string): Promise<J | undefined>;
}

async function jobByDeduplicationId<J>(queue: DeduplicatingQueue<J>, eventId: string): Promise<J | undefined> {
  const jobId = await queue.getDeduplicationJobId(eventId);
  return jobId ? ((await queue.getJob(jobId)) ?? undefined) : undefined;
}
