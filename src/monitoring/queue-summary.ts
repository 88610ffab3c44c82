import type { Queue } from 'bullmq';
import type { Logger } from '../logging/logger';
import type { QueueRegistry } from '../pipeline/queue-registry';

export const JOB_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'failed', 'completed'] as const;

export interface QueueSummary {
  queue: string;
  counts: Record<(typeof JOB_STATES)[number], number>;
  paused: boolean;
  /** Age of the oldest job waiting to be processed; 0 when none waits (or its timestamp cannot be read). */
  oldestWaitingSeconds: number;
}

type Queues = Pick<QueueRegistry, 'allQueues' | 'redis'>;
/**
 * Where an unreadable oldest waiting job is reported: throttled, as the metrics scrape and the dashboard ask every few
 * seconds.
 */
type Log = Pick<Logger, 'repeated'>;

/**
 * When the oldest waiting job was added: its hash's `timestamp`, read with one HMGET beside its
 * `data` and `opts`. BullMQ's Job would parse those two and throw on one that is not JSON, failing
 * every queue's summary (and silently freezing the queue gauges); here such a job still has its age,
 * and a warn line names it, as a worker would fail on it too. Two round trips, as getJobs took.
 */
async function oldestWaitingAt(queues: Queues, queue: Queue, log: Log): Promise<number | undefined> {
  // BullMQ lists waiting jobs newest first; the last one is the oldest.
  const [id] = await queue.getRanges(['waiting'], -1, -1);
  if (id === undefined) return undefined;
  const [timestamp, data, opts] = await queues.redis.hmget(queue.toKey(id), 'timestamp', 'data', 'opts');
  // All absent: the job left the queue between the two reads.
  if (timestamp == null && data == null && opts == null) return undefined;
  const at = Number(timestamp);
  const reason = [
    notJson('data', data),
    notJson('opts', opts),
    at > 0 ? undefined : `its timestamp is ${timestamp == null ? 'missing' : `not a time: ${timestamp}`}`,
  ]
    .filter(Boolean)
    .join('; ');
  if (reason)
    log.repeated('warn', `unreadable oldest waiting job:${queue.name}:${id}`, 'oldest waiting job unreadable', {
      queue: queue.name,
      jobId: id,
      reason,
    });
  return at > 0 ? at : undefined;
}

function notJson(field: string, text: string | null | undefined): string | undefined {
  if (text == null) return undefined;
  try {
    JSON.parse(text);
    return undefined;
  } catch (err) {
    return `its stored ${field} is not JSON: ${(err as Error).message}`;
  }
}

export async function summariseQueue(queues: Queues, queue: Queue, log: Log, now = Date.now()): Promise<QueueSummary> {
  const [counts, paused, oldestAt] = await Promise.all([
    queue.getJobCounts(...JOB_STATES),
    queue.isPaused(),
    oldestWaitingAt(queues, queue, log),
  ]);
  return {
    queue: queue.name,
    counts: counts as QueueSummary['counts'],
    paused,
    oldestWaitingSeconds: oldestAt ? Math.max(0, (now - oldestAt) / 1000) : 0,
  };
}

/**
 * Every queue's counts, whether it is paused and the age of its oldest waiting job; one unreadable job costs no queue
 * its summary.
 */
export async function summariseQueues(queues: Queues, log: Log): Promise<QueueSummary[]> {
  return Promise.all(queues.allQueues().map((q) => summariseQueue(queues, q, log)));
}
