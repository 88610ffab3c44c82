import type { Request, Response } from 'express';
import type { RedisClient } from '../redis/connect';
import type { Queue } from 'bullmq';
import type { Logger } from '../logging/logger';
import type { ArchiveStatus } from '../monitoring/archive-metrics';
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
  archiveStatus?: () => Promise<ArchiveStatus>,
) {
  return async (_req: Request, res: Response): Promise<void> => {
    try {
      await withTimeout(
        Promise.all([redis.ping(), probe.getJobCounts('waiting')]),
        READY_TIMEOUT_MS,
        () => new Error(`no answer within ${READY_TIMEOUT_MS} ms`),
      );
      // The archive is written behind the answer: its state is detail, never a reason to stop taking notifications.
      const archive = archiveStatus
        ? await withTimeout(archiveStatus(), READY_TIMEOUT_MS, () => new Error('no answer')).catch(() => undefined)
        : undefined;
      const risks = durabilityRisks();
      res.json({
        status: 'ready',
        redis: 'up',
        ...(risks && { durabilityRisks: risks }),
        ...(archiveStatus ? { archive: archive ?? { state: 'unknown' } } : {}),
      });
    } catch (err) {
      logger.warn('not ready: redis down', { error: (err as Error).message });
      res.status(503).json({ status: 'not_ready', redis: 'down' });
    }
  };
}
