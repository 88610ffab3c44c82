import type { Request, Response } from 'express';
import type { Redis } from 'ioredis';
import type { Queue } from 'bullmq';
import { withTimeout } from '../queue/with-timeout';

const READY_TIMEOUT_MS = 1000;

/** Ready when Redis answers and a queue can be read, within a second; 503 otherwise. */
export function readiness(redis: Redis, probe: Queue) {
  return async (_req: Request, res: Response): Promise<void> => {
    try {
      await withTimeout(Promise.all([redis.ping(), probe.getJobCounts('waiting')]), READY_TIMEOUT_MS, () => new Error(`no answer within ${READY_TIMEOUT_MS} ms`));
      res.json({ status: 'ready', redis: 'up' });
    } catch (err) {
      res.status(503).json({ status: 'not_ready', redis: 'down', error: (err as Error).message });
    }
  };
}
