import { Router } from 'express';
import { z } from 'zod';
import { EXPECTATION_STATES } from '../../reconciliation/expectation';
import type { Expectations } from '../../reconciliation/expectations';
import { actorOf } from '../audit';

const listQuery = z.strictObject({
  state: z.enum(EXPECTATION_STATES).optional(),
  requestId: z.string().min(1).optional(),
  limit: z.coerce.number().int().min(1).max(1000).optional(),
});

/**
 * `POST /` expects a notification (201 new, 200 when the same one is open already; 429 past
 * maxOpenExpectations), `GET /` lists them (by state, or by request_id), `GET /:id` shows one,
 * `POST /:id/cancel` cancels an open one.
 */
export function expectationRoutes(expectations: Expectations): Router {
  const router = Router();
  router.post('/', async (req, res) => {
    const { expectation, created } = await expectations.expect(actorOf(req), req.body);
    res.status(created ? 201 : 200).json({ expectation, created });
  });
  router.get('/', async (req, res) => {
    const query = listQuery.safeParse(req.query);
    if (!query.success)
      return void res
        .status(400)
        .json({ error: 'bad_query', issues: query.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) });
    const { state, requestId, limit = 100 } = query.data;
    const found = requestId
      ? (await expectations.ofRequest(requestId)).filter((e) => !state || e.state === state)
      : await expectations.list({ state, limit });
    res.json({ expectations: found.slice(0, limit) });
  });
  router.get('/:id', async (req, res) => {
    res.json({ expectation: await expectations.get(req.params.id) });
  });
  router.post('/:id/cancel', async (req, res) => {
    res.json({ expectation: await expectations.cancel(actorOf(req), req.params.id) });
  });
  return router;
}
