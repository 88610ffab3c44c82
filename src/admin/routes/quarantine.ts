import { Router } from 'express';
import { z } from 'zod';
import type { Quarantine } from '../../operations/quarantine';
import type { Recovery } from '../../operations/recovery';
import { actorOf } from '../audit';

const replayBody = z.object({ ids: z.array(z.string().min(1)).min(1), body: z.string().optional() });

export function quarantineRoutes(quarantine: Quarantine, recovery: Recovery): Router {
  const router = Router();
  router.get('/', async (req, res) => {
    const limit = Math.min(Number(req.query.limit ?? 100) || 100, 10000);
    res.json({ quarantined: await quarantine.list(limit) });
  });
  router.post('/replay', async (req, res) => {
    const parsed = replayBody.safeParse(req.body);
    if (!parsed.success) {
      return void res.status(400).json({
        error: 'bad_request',
        message: 'send {"ids": [...]}, or {"ids": [one], "body": "<corrected JSON text>"}',
      });
    }
    res.json({ results: await recovery.replayQuarantined(actorOf(req), parsed.data.ids, parsed.data.body) });
  });
  return router;
}
