import { Router } from 'express';
import { summariseQueues } from '../../operations/queue-summary';
import type { TargetControl } from '../../operations/targets';
import type { ServiceQueues } from '../../queue/open-queues';

export function queueRoutes(queues: ServiceQueues, targets: TargetControl): Router {
  const router = Router();
  router.get('/', async (_req, res) => {
    const [summaries, targetStates] = await Promise.all([summariseQueues(queues.all.values()), targets.states()]);
    res.json({ queues: summaries, targets: targetStates });
  });
  return router;
}
