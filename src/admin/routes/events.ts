import { Router } from 'express';
import { z } from 'zod';
import { eventIdsForRequest, findEvent } from '../../operations/event-lookup';
import type { ArchiveHistory } from '../../archive/history';
import type { Recovery } from '../../operations/recovery';
import type { EventLookup } from '../../pipeline/lookup';
import type { Expectations } from '../../reconciliation/expectations';
import { actorOf } from '../audit';

const resendBody = z.object({ target: z.string().min(1).optional() }).strict();

export function eventRoutes(
  pipeline: Parameters<typeof findEvent>[0] & Pick<EventLookup, 'eventIdsForRequest'>,
  mask: (p: unknown) => unknown,
  recovery: Recovery,
  /** A request_id's expectations are shown beside its events. */
  expectations: Pick<Expectations, 'ofRequest'>,
  /** Asked when Redis no longer holds an event (`"source": "archive"`), and for request ids. */
  archive?: ArchiveHistory,
): Router {
  const router = Router();
  router.post('/:eventId/resend', async (req, res) => {
    const body = resendBody.safeParse(req.body ?? {});
    if (!body.success)
      return void res
        .status(400)
        .json({ error: 'bad_request', message: 'send {} (every subscribed target) or {"target": "<name>"}' });
    res.json(await recovery.resendEvent(actorOf(req), req.params.eventId, body.data.target));
  });
  router.get('/:eventId', async (req, res) => {
    const event = await findEvent(pipeline, req.params.eventId, mask, archive);
    if (!event)
      return void res.status(404).json({
        error: 'not_found',
        message:
          `no event ${req.params.eventId} ` +
          `(unknown, or past the de-duplication window${archive ? ' and not archived' : ''})`,
      });
    res.json(event);
  });
  router.get('/', async (req, res) => {
    const requestId = req.query.requestId;
    if (typeof requestId !== 'string' || !requestId)
      return void res.status(400).json({ error: 'bad_query', message: 'give ?requestId=<the platform request_id>' });
    const [ids, expected] = await Promise.all([
      eventIdsForRequest(pipeline, requestId, archive),
      expectations.ofRequest(requestId),
    ]);
    const events = await Promise.all(ids.map((id) => findEvent(pipeline, id, mask, archive)));
    res.json({ requestId, events: events.filter((e) => e !== undefined), expectations: expected });
  });
  return router;
}
