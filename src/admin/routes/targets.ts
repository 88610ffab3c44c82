import { Router, type Response } from 'express';
import { KeyNotBlockedError, NotOrderedError, type BlockedKeys } from '../../operations/blocked-keys';
import { UnknownTargetError } from '../../operations/dead-letters';
import type { Recovery } from '../../operations/recovery';
import type { TargetControl } from '../../operations/targets';
import { actorOf } from '../audit';

/** Answers the target errors with their status; anything else goes on to the error handler. */
function refuse(res: Response, err: unknown): void {
  if (err instanceof UnknownTargetError) return void res.status(404).json({ error: 'unknown_target', message: err.message });
  if (err instanceof KeyNotBlockedError) return void res.status(err.status).json({ error: 'not_blocked', message: err.message });
  if (err instanceof NotOrderedError) return void res.status(err.status).json({ error: 'not_ordered', message: err.message });
  throw err;
}

export function targetRoutes(targets: TargetControl, blockedKeys: BlockedKeys, recovery: Recovery): Router {
  const router = Router();
  router.get('/', async (_req, res) => {
    res.json({ targets: await targets.states() });
  });
  for (const action of ['pause', 'resume'] as const) {
    router.post(`/:name/${action}`, async (req, res) => {
      try {
        await recovery.setTargetPaused(actorOf(req), req.params.name, action === 'pause');
      } catch (err) {
        return refuse(res, err);
      }
      res.json({ target: req.params.name, paused: action === 'pause' });
    });
  }

  // A target without `order` has no blocked keys: an empty list, and `ordered: false` to say why.
  router.get('/:name/blocked', async (req, res) => {
    try {
      res.json({ target: req.params.name, ...(await blockedKeys.list(req.params.name)) });
    } catch (err) {
      refuse(res, err);
    }
  });

  // The key is one path segment, URL-encoded (`/` as %2F); Express hands it over decoded.
  router.post('/:name/blocked/:key/release', async (req, res) => {
    try {
      const released = await recovery.releaseBlockedKey(actorOf(req), req.params.name, req.params.key);
      res.json({ target: req.params.name, key: released.key, deadLetter: `${req.params.name}/${released.eventId}` });
    } catch (err) {
      refuse(res, err);
    }
  });
  return router;
}
