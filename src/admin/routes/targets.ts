import { Router } from 'express';
import type { BlockedKeys } from '../../operations/blocked-keys';
import type { Recovery } from '../../operations/recovery';
import type { TargetControl } from '../../operations/targets';
import { actorOf } from '../audit';

export function targetRoutes(targets: TargetControl, blockedKeys: BlockedKeys, recovery: Recovery): Router {
  const router = Router();
  router.get('/', async (_req, res) => {
    res.json({ targets: await targets.states() });
  });
  for (const action of ['pause', 'resume'] as const) {
    router.post(`/:name/${action}`, async (req, res) => {
      await recovery.setTargetPaused(actorOf(req), req.params.name, action === 'pause');
      res.json({ target: req.params.name, paused: action === 'pause' });
    });
  }

  // A target without `order` has no blocked keys: an empty list, and `ordered: false` to say why.
  router.get('/:name/blocked', async (req, res) => {
    res.json({ target: req.params.name, ...(await blockedKeys.list(req.params.name)) });
  });

  // The key is one path segment, URL-encoded (`/` as %2F); Express hands it over decoded.
  router.post('/:name/blocked/:key/release', async (req, res) => {
    const released = await recovery.releaseBlockedKey(actorOf(req), req.params.name, req.params.key);
    res.json({ target: req.params.name, key: released.key, deadLetter: `${req.params.name}/${released.eventId}` });
  });
  return router;
}
