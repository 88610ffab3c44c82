import type { Job, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { DeliveryFailure, DeliveryJob } from '../forwarding/delivery-job';
import type { EventJob, QuarantineJob } from '../queue/job';
import type { ServiceQueues } from '../queue/open-queues';

export interface DeliveryView {
  target: string;
  state: string;
  attemptsMade: number;
  deliveredAt?: string;
  result?: unknown;
  failedReason?: string;
  /** Every failed attempt, oldest first. */
  failedAttempts: DeliveryFailure[];
}

export interface EventView {
  eventId: string;
  queue: string;
  jobId: string;
  state: string;
  eventType: string;
  receivedAt: string;
  path: string;
  merchantId?: string;
  payload?: unknown;
  errors?: string[];
  deliveries: DeliveryView[];
}

async function jobByDedupId(redis: Redis, queue: Queue, eventId: string): Promise<Job | undefined> {
  const jobId = await redis.get(queue.toKey(`de:${eventId}`));
  return jobId ? ((await queue.getJob(jobId)) ?? undefined) : undefined;
}

async function deliveryView(target: string, queue: Queue, eventId: string): Promise<DeliveryView | undefined> {
  const job = (await queue.getJob(eventId)) as Job<DeliveryJob> | undefined;
  if (!job) return undefined;
  const [state, logs] = await Promise.all([job.getState(), queue.getJobLogs(eventId)]);
  return {
    target,
    state,
    attemptsMade: job.attemptsMade,
    deliveredAt: state === 'completed' && job.finishedOn ? new Date(job.finishedOn).toISOString() : undefined,
    result: job.returnvalue ?? undefined,
    failedReason: job.failedReason || undefined,
    failedAttempts: logs.logs.map((l) => JSON.parse(l) as DeliveryFailure),
  };
}

/** An event by its id: where it is, its payload (masked), and each target's delivery with every attempt. */
export async function findEvent(redis: Redis, queues: ServiceQueues, eventId: string, mask: (p: unknown) => unknown): Promise<EventView | undefined> {
  for (const queue of [...queues.events.values(), queues.quarantine]) {
    const job = (await jobByDedupId(redis, queue, eventId)) as Job<EventJob | QuarantineJob> | undefined;
    if (!job) continue;
    const deliveries = await Promise.all([...queues.deliveries].map(([target, q]) => deliveryView(target, q, eventId)));
    const data = job.data;
    return {
      eventId,
      queue: queue.name,
      jobId: job.id ?? '',
      state: await job.getState(),
      eventType: data.eventType,
      receivedAt: data.receivedAt,
      path: data.path,
      merchantId: data.merchantId,
      payload: 'payload' in data ? mask(data.payload) : undefined,
      errors: 'errors' in data ? data.errors : undefined,
      deliveries: deliveries.filter((d): d is DeliveryView => d !== undefined),
    };
  }
  return undefined;
}
