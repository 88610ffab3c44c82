import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { EVENT_TYPES } from '../events/table';
import { deliveryQueueName } from '../forwarding/delivery-job';
import type { Target } from '../forwarding/target-schema';
import { ignoreConnectionError } from './ingest';
import { eventQueueName, QUARANTINE_QUEUE } from './names';

/** Every queue of the service, for reading and operating on them (admin, CLI, metrics). */
export interface ServiceQueues {
  events: ReadonlyMap<string, Queue>;
  quarantine: Queue;
  /** By target name. */
  deliveries: ReadonlyMap<string, Queue>;
  /** All of them by queue name. */
  all: ReadonlyMap<string, Queue>;
  close(): Promise<void>;
}

export function openServiceQueues(connection: Redis, prefix: string, targets: readonly Target[]): ServiceQueues {
  const open = (name: string) => new Queue(name, { connection, prefix }).on('error', ignoreConnectionError);
  const events = new Map(EVENT_TYPES.map((t) => [eventQueueName(t), open(eventQueueName(t))] as const));
  const quarantine = open(QUARANTINE_QUEUE);
  const deliveries = new Map(targets.map((t) => [t.name, open(deliveryQueueName(t.name))] as const));
  const all = new Map<string, Queue>([...events, [QUARANTINE_QUEUE, quarantine], ...[...deliveries.values()].map((q) => [q.name, q] as const)]);
  return {
    events,
    quarantine,
    deliveries,
    all,
    async close() {
      await Promise.all([...all.values()].map((q) => q.close()));
    },
  };
}
