import { Router } from 'express';
import type { Reloader } from '../../operations/reload';
import { actorOf } from '../audit';

/**
 * `POST /config/reload`: re-reads CONFIG_FILE in this process (each process of a ROLE split is reloaded on its own).
 */
export function configRoutes(reloader: Reloader | undefined): Router {
  const router = Router();
  router.post('/reload', async (req, res) => {
    if (!reloader)
      return void res
        .status(501)
        .json({ error: 'not_available', message: 'this admin app was built without a reloader' });
    res.json(await reloader.reload(actorOf(req)));
  });
  return router;
}
