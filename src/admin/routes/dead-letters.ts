import { Router, type Request, type Response } from 'express';
import type { Logger } from '../../logging/logger';
import { UnknownTargetError, type DeadLetters } from '../../operations/dead-letters';
import { audit } from '../audit';
import { listQuerySchema, replayBodySchema } from '../query';

export function deadLetterRoutes(deadLetters: DeadLetters, logger: Logger): Router {
  const router = Router();

  router.get('/', async (req: Request, res: Response) => {
    const query = listQuerySchema.safeParse(req.query);
    if (!query.success) return void res.status(400).json({ error: 'bad_query', issues: query.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) });
    try {
      res.json({ deadLetters: await deadLetters.list(query.data) });
    } catch (err) {
      if (err instanceof UnknownTargetError) return void res.status(404).json({ error: 'unknown_target', message: err.message });
      throw err;
    }
  });

  router.post('/replay', async (req: Request, res: Response) => {
    const body = replayBodySchema.safeParse(req.body);
    if (!body.success) {
      return void res.status(400).json({ error: 'bad_request', message: 'send {"ids": ["<target>/<job id>", …]} or {"all": true, "target"?, "eventType"?, "from"?, "to"?}' });
    }
    try {
      const result = 'ids' in body.data ? await deadLetters.replay(body.data.ids) : await deadLetters.replayMatching(body.data);
      audit(logger, req, 'dead-letters.replay', { items: result.replayed, notFound: result.notFound });
      res.json(result);
    } catch (err) {
      if (err instanceof UnknownTargetError) return void res.status(404).json({ error: 'unknown_target', message: err.message });
      throw err;
    }
  });

  return router;
}
