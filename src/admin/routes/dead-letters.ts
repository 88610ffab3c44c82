import { Router, type Request, type Response } from 'express';
import type { DeadLetters } from '../../operations/dead-letters';
import type { Recovery } from '../../operations/recovery';
import { actorOf } from '../audit';
import { listQuerySchema, replayBodySchema } from '../query';

export function deadLetterRoutes(deadLetters: DeadLetters, recovery: Recovery): Router {
  const router = Router();

  router.get('/', async (req: Request, res: Response) => {
    const query = listQuerySchema.safeParse(req.query);
    if (!query.success)
      return void res
        .status(400)
        .json({ error: 'bad_query', issues: query.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) });
    res.json({ deadLetters: await deadLetters.list(query.data) });
  });

  router.post('/replay', async (req: Request, res: Response) => {
    const body = replayBodySchema.safeParse(req.body);
    if (!body.success) {
      return void res.status(400).json({
        error: 'bad_request',
        message: 'send {"ids": ["<target>/<job id>", …]} or {"all": true, "target"?, "eventType"?, "from"?, "to"?}',
      });
    }
    res.json(await recovery.replayDeadLetters(actorOf(req), body.data));
  });

  router.delete('/:target/:eventId', async (req, res) => {
    res.json({ discarded: await recovery.discardDeadLetter(actorOf(req), req.params.target, req.params.eventId) });
  });

  return router;
}
