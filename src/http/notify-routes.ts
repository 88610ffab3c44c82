import type { NextFunction, Request, Response } from 'express';
import { EVENT_TABLE, type EventDefinition } from '../events/table';
import { receiveNotification, type ReceiveDeps } from '../receiving/receive';
import { RET_CODES, sendEnvelope, SUCCESS } from './envelope';
import { readBody } from './read-body';

const REJECTION_MESSAGES = {
  header: 'Unauthorized: missing or malformed signature header',
  timestamp: 'Unauthorized: timestamp outside the allowed window',
  signature: 'Unauthorized: signature missing or invalid',
} as const;

/**
 * One middleware serves all seven notify paths from the event table: a map lookup on the path, no
 * per-path router layers, and no body parser (the signature is over the raw bytes).
 */
export function notifyMiddleware(deps: ReceiveDeps, basePath: string, bodyLimit: number) {
  const routes = new Map<string, EventDefinition>(EVENT_TABLE.map((e) => [basePath + e.path, e]));
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const definition = routes.get(req.path);
    if (!definition) return next();
    if (req.method !== 'POST') {
      res.setHeader('Allow', 'POST');
      return sendEnvelope(res, 405, RET_CODES.methodNotAllowed, 'Method Not Allowed: notify paths accept POST only');
    }
    try {
      const startedAt = Date.now();
      const startedAtHr = performance.now();
      const body = await readBody(req, bodyLimit);
      const result = await receiveNotification(deps, { definition, target: req.originalUrl, headers: req.headers, body, startedAt, startedAtHr });
      if (result.kind === 'acknowledged') {
        res.status(200).json(SUCCESS);
      } else if (result.kind === 'rejected') {
        sendEnvelope(res, 401, RET_CODES[result.class], REJECTION_MESSAGES[result.class]);
      } else {
        res.setHeader('Retry-After', '5');
        sendEnvelope(res, 503, RET_CODES.unavailable, 'Service Unavailable: notification not stored, retry later');
      }
    } catch (err) {
      next(err);
    }
  };
}
