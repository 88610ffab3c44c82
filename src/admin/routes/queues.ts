import { Router } from 'express';
import { summariseQueues } from '../../operations/queue-summary';
import type { TargetControl } from '../../operations/targets';
import type { Pipeline } from '../../pipeline/pipeline';

export function queueRoutes(pipeline: Pick<Pipeline, 'allQueues'>, targets: TargetControl): Router {
  const router = Router();
  router.get('/', async (_req, res) => {
    const [summaries, targetStates] = await Promise.all([summariseQueues(pipeline.allQueues()), targets.states()]);
    res.json({ queues: summaries, targets: targetStates });
  });
  return router;
}
