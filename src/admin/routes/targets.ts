import { Router } from 'express';
import type { Logger } from '../../logging/logger';
import { UnknownTargetError } from '../../operations/dead-letters';
import type { TargetControl } from '../../operations/targets';
import { audit } from '../audit';

export function targetRoutes(targets: TargetControl, logger: Logger): Router {
  const router = Router();
  router.get('/', async (_req, res) => {
    res.json({ targets: await targets.states() });
  });
  for (const action of ['pause', 'resume'] as const) {
    router.post(`/:name/${action}`, async (req, res) => {
      try {
        await targets[action](req.params.name);
      } catch (err) {
        if (err instanceof UnknownTargetError) return void res.status(404).json({ error: 'unknown_target', message: err.message });
        throw err;
      }
      audit(logger, req, `target.${action}`, { items: [req.params.name] });
      res.json({ target: req.params.name, paused: action === 'pause' });
    });
  }
  return router;
}
