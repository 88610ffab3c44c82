import type { NextFunction, Request, Response } from 'express';

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Refuses state-changing requests that a browser sent from another site: basic auth credentials are
 * replayed by the browser on any request, so without this a page elsewhere could pause targets.
 */
export function sameOriginWrites(req: Request, res: Response, next: NextFunction): void {
  if (SAFE.has(req.method)) return next();
  const site = req.headers['sec-fetch-site'];
  const origin = req.headers.origin;
  let crossOrigin = site !== undefined && site !== 'same-origin' && site !== 'none';
  if (!crossOrigin && origin) {
    try {
      crossOrigin = new URL(origin).host !== req.headers.host;
    } catch {
      crossOrigin = true;
    }
  }
  if (crossOrigin)
    return void res
      .status(403)
      .json({ error: 'cross_origin', message: 'admin changes are accepted from the admin origin only' });
  next();
}
