import { Router } from 'express';
import type { Logger } from '../../logging/logger';
import { summariseQueues } from '../../monitoring/queue-summary';
import type { TargetControl } from '../../operations/targets';
import type { QueueRegistry } from '../../pipeline/queue-registry';

export function queueRoutes(
  pipeline: Pick<QueueRegistry, 'allQueues' | 'redis'>,
  targets: TargetControl,
  logger: Pick<Logger, 'repeated'>,
): Router {
  const router = Router();
  router.get('/', async (_req, res) => {
    const [summaries, targetStates] = await Promise.all([summariseQueues(pipeline, logger), targets.states()]);
    res.json({ queues: summaries, targets: targetStates });
  });
  return router;
}
