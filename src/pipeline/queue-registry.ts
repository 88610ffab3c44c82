import type { Queue } from 'bullmq';
import type { EventType } from '../model/event-table';
import { eventJobOptions } from '../model/job-options';
import type { DeliveryQueue, EventQueue, QuarantineQueue } from '../model/queues';
import type { Target } from '../model/target-schema';
import { createSequencer, type Sequencer } from '../ordering/sequencer';
import type { RedisClient } from '../redis/connect';
import type { PipelineOptions } from './options';
import type { PipelineObserver } from './producer';
import { openDeliveryQueue, openEventQueues, openQuarantineQueue } from './queues';

/**
 * Every queue of the service on one connection: opened at start, reconfigured when the targets
 * change, closed at the end. Nothing else opens a queue; nothing here writes a job.
 */
export interface QueueRegistry {
  readonly prefix: string;
  /** The connection the queues share; our own keys (replay bindings, request index) use it too. */
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
  /** The ordered delivery of a target with `order` (its keys' sequences); undefined for any other. */
  ordering(target: string): Sequencer | undefined;
  /** Closes the queues; the connection is the caller's. */
  close(): Promise<void>;
}

export function createQueueRegistry(
  connection: RedisClient,
  options: PipelineOptions,
  observer: PipelineObserver = {},
): QueueRegistry {
  const { prefix } = options;
  const eventOptions = eventJobOptions(options.retention);
  const events = openEventQueues(connection, prefix, eventOptions);
  const quarantine = openQuarantineQueue(connection, prefix, eventOptions);
  const deliveries = new Map<string, DeliveryQueue>();
  let targets: readonly Target[] = [];

  /** Opens queues for new targets at once; returns the queues of removed ones, for the caller to close. */
  function applyTargets(next: readonly Target[]): DeliveryQueue[] {
    const names = new Set(next.map((t) => t.name));
    const removed = [...deliveries].filter(([name]) => !names.has(name));
    for (const [name] of removed) deliveries.delete(name);
    for (const t of next)
      if (!deliveries.has(t.name)) deliveries.set(t.name, openDeliveryQueue(connection, prefix, t.name));
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
    prefix,
    redis: connection,
    options,
    eventQueue(type) {
      const queue = events.get(type);
      if (!queue) throw new Error(`no queue for event type ${type}`);
      return queue;
    },
    eventQueues: () => [...events.values()],
    quarantine,
    deliveryQueue: (target) => deliveries.get(target),
    deliveryQueues: () => [...deliveries],
    allQueues: () => [...events.values(), quarantine, ...deliveries.values()],
    targets: () => targets,
    async setTargets(next) {
      await Promise.all(applyTargets(next).map((q) => q.close()));
    },
    ordering,
    async close() {
      await Promise.all([...events.values(), quarantine, ...deliveries.values()].map((q) => q.close()));
    },
  };
}
