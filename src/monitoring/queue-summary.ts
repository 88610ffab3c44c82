import type { Queue } from 'bullmq';

export const JOB_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'failed', 'completed'] as const;

export interface QueueSummary {
  queue: string;
  counts: Record<(typeof JOB_STATES)[number], number>;
  paused: boolean;
  /** Age of the oldest job waiting to be processed; 0 when none waits. */
  oldestWaitingSeconds: number;
}

export async function summariseQueue(queue: Queue, now = Date.now()): Promise<QueueSummary> {
  const [counts, paused, oldest] = await Promise.all([
    queue.getJobCounts(...JOB_STATES),
    queue.isPaused(),
    // BullMQ lists waiting jobs newest first; the last one is the oldest.
    queue.getJobs(['waiting'], -1, -1),
  ]);
  const oldestAt = oldest[0]?.timestamp;
  return {
    queue: queue.name,
    counts: counts as QueueSummary['counts'],
    paused,
    oldestWaitingSeconds: oldestAt ? Math.max(0, (now - oldestAt) / 1000) : 0,
  };
}

export async function summariseQueues(queues: Iterable<Queue>): Promise<QueueSummary[]> {
  return Promise.all([...queues].map((q) => summariseQueue(q)));
}
