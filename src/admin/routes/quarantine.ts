import { Router } from 'express';
import { z } from 'zod';
import type { Logger } from '../../logging/logger';
import type { Quarantine } from '../../operations/quarantine';
import { audit } from '../audit';

const replayBody = z.object({ ids: z.array(z.string().min(1)).min(1), body: z.string().optional() });

export function quarantineRoutes(quarantine: Quarantine, logger: Logger): Router {
  const router = Router();
  router.get('/', async (req, res) => {
    const limit = Math.min(Number(req.query.limit ?? 100) || 100, 10000);
    res.json({ quarantined: await quarantine.list(limit) });
  });
  router.post('/replay', async (req, res) => {
    const parsed = replayBody.safeParse(req.body);
    if (!parsed.success || (parsed.data.body !== undefined && parsed.data.ids.length !== 1)) {
      return void res.status(400).json({ error: 'bad_request', message: 'send {"ids": [...]}, or {"ids": [one], "body": "<corrected JSON text>"}' });
    }
    const results = await quarantine.replay(parsed.data.ids, parsed.data.body);
    audit(logger, req, 'quarantine.replay', { items: parsed.data.ids, corrected: parsed.data.body !== undefined, outcomes: results.map((r) => r.outcome) });
    res.json({ results });
  });
  return router;
}
