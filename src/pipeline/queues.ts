import { Queue, type JobsOptions } from 'bullmq';
import type { RedisClient } from '../redis/connect';
import { EVENT_TYPES, type EventType } from '../model/event-table';
import type { DeliveryJob, DeliveryResult, EventJob, FanoutResult, QuarantineJob } from '../model/jobs';
import type { DeliveryQueue, EventQueue, QuarantineQueue } from '../model/queues';
import { deliveryQueueName, eventQueueName, QUARANTINE_QUEUE } from '../model/names';

/** Queues re-emit their connection's errors; the connection's own listener already logs them. */
function ignoreConnectionError(): void {}

/**
 * The only place the service opens a BullMQ queue: every queue of the service shares the one
 * connection and prefix it is given.
 */
export function openQueue<D, R>(
  connection: RedisClient,
  prefix: string,
  name: string,
  defaultJobOptions?: JobsOptions,
): Queue<D, R, EventType> {
  const queue: Queue<D, R, EventType> = new Queue(name, {
    connection,
    prefix,
    ...(defaultJobOptions ? { defaultJobOptions } : {}),
  });
  queue.on('error', ignoreConnectionError);
  return queue;
}

export function openEventQueues(
  connection: RedisClient,
  prefix: string,
  defaultJobOptions: JobsOptions,
): Map<EventType, EventQueue> {
  return new Map(
    EVENT_TYPES.map(
      (t) => [t, openQueue<EventJob, FanoutResult>(connection, prefix, eventQueueName(t), defaultJobOptions)] as const,
    ),
  );
}

export function openQuarantineQueue(
  connection: RedisClient,
  prefix: string,
  defaultJobOptions: JobsOptions,
): QuarantineQueue {
  return openQueue<QuarantineJob, unknown>(connection, prefix, QUARANTINE_QUEUE, defaultJobOptions);
}

export function openDeliveryQueue(connection: RedisClient, prefix: string, target: string): DeliveryQueue {
  return openQueue<DeliveryJob, DeliveryResult>(connection, prefix, deliveryQueueName(target));
}
