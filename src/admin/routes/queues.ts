import { Router } from 'express';
import { summariseQueues } from '../../monitoring/queue-summary';
import type { TargetControl } from '../../operations/targets';
import type { QueueRegistry } from '../../pipeline/queue-registry';

export function queueRoutes(pipeline: Pick<QueueRegistry, 'allQueues'>, targets: TargetControl): Router {
  const router = Router();
  router.get('/', async (_req, res) => {
    const [summaries, targetStates] = await Promise.all([summariseQueues(pipeline.allQueues()), targets.states()]);
    res.json({ queues: summaries, targets: targetStates });
  });
  return router;
}
