import { Router } from 'express';
import { findEvent } from '../../operations/event-lookup';
import type { Pipeline } from '../../pipeline/pipeline';

export function eventRoutes(pipeline: Pipeline, mask: (p: unknown) => unknown): Router {
  const router = Router();
  router.get('/:eventId', async (req, res) => {
    const event = await findEvent(pipeline, req.params.eventId, mask);
    if (!event) return void res.status(404).json({ error: 'not_found', message: `no event ${req.params.eventId} (unknown, or past the de-duplication window)` });
    res.json(event);
  });
  router.get('/', async (req, res) => {
    const requestId = req.query.requestId;
    if (typeof requestId !== 'string' || !requestId) return void res.status(400).json({ error: 'bad_query', message: 'give ?requestId=<the platform request_id>' });
    const ids = await pipeline.eventIdsForRequest(requestId);
    const events = await Promise.all(ids.map((id) => findEvent(pipeline, id, mask)));
    res.json({ requestId, events: events.filter((e) => e !== undefined) });
  });
  return router;
}
