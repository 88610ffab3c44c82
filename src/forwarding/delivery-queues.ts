import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { ignoreConnectionError } from '../queue/ingest';
import { deliveryQueueName } from './delivery-job';
import type { Target } from './target-schema';

/** The delivery queue of each target, by target name, for reading and operating on them. */
export function openDeliveryQueues(connection: Redis, prefix: string, targets: readonly Target[]): Map<string, Queue> {
  return new Map(targets.map((t) => [t.name, new Queue(deliveryQueueName(t.name), { connection, prefix }).on('error', ignoreConnectionError)] as const));
}

export async function closeQueues(queues: ReadonlyMap<string, Queue>): Promise<void> {
  await Promise.all([...queues.values()].map((q) => q.close()));
}
