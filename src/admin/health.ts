import type { Request, Response } from 'express';
import type { RedisClient } from '../redis/connect';
import type { Queue } from 'bullmq';
import type { Logger } from '../logging/logger';
import type { DurabilityRisk } from '../monitoring/redis-durability';
import { withTimeout } from '../model/with-timeout';

const READY_TIMEOUT_MS = 1000;

/**
 * Ready when Redis answers and a queue can be read, within a second; 503 otherwise. The probe's
 * answer says only "redis down": the error's text (host names, addresses) stays in the log. Once
 * Redis's durability is judged, its risks are in the answer too (`durabilityRisks`, as /metrics counts them).
 */
export function readiness(
  redis: RedisClient,
  probe: Queue,
  logger: Logger,
  durabilityRisks: () => readonly DurabilityRisk[] | undefined = () => undefined,
) {
  return async (_req: Request, res: Response): Promise<void> => {
    try {
      await withTimeout(
        Promise.all([redis.ping(), probe.getJobCounts('waiting')]),
        READY_TIMEOUT_MS,
        () => new Error(`no answer within ${READY_TIMEOUT_MS} ms`),
      );
      const risks = durabilityRisks();
      res.json({ status: 'ready', redis: 'up', ...(risks && { durabilityRisks: risks }) });
    } catch (err) {
      logger.warn('not ready: redis down', { error: (err as Error).message });
      res.status(503).json({ status: 'not_ready', redis: 'down' });
    }
  };
}
