import { Router } from 'express';
import { UnknownTargetError } from '../../operations/dead-letters';
import type { Recovery } from '../../operations/recovery';
import type { TargetControl } from '../../operations/targets';
import { actorOf } from '../audit';

export function targetRoutes(targets: TargetControl, recovery: Recovery): Router {
  const router = Router();
  router.get('/', async (_req, res) => {
    res.json({ targets: await targets.states() });
  });
  for (const action of ['pause', 'resume'] as const) {
    router.post(`/:name/${action}`, async (req, res) => {
      try {
        await recovery.setTargetPaused(actorOf(req), req.params.name, action === 'pause');
      } catch (err) {
        if (err instanceof UnknownTargetError) return void res.status(404).json({ error: 'unknown_target', message: err.message });
        throw err;
      }
      res.json({ target: req.params.name, paused: action === 'pause' });
    });
  }
  return router;
}
