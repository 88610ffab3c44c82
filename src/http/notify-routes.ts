import type { NextFunction, Request, Response } from 'express';
import { EVENT_TABLE, type EventDefinition } from '../events/table';
import { receiveNotification, type ReceiveDeps } from '../receiving/receive';
import { send } from './answer';
import type { PublicAnswers } from './public-answers';
import { bodyLeftUnread, readBody, RequestAbandonedError } from './read-body';

export interface NotifyOptions {
  basePath: string;
  bodyLimitBytes: number;
  answers: PublicAnswers;
}

/**
 * One middleware, the app's first, serves all seven notify paths from the event table: a map lookup
 * on the path, no per-path router layers, no body parser (the signature is over the raw bytes), and
 * prepared answers (helmet's headers included) written in one go.
 */
export function notifyMiddleware(deps: ReceiveDeps, { basePath, bodyLimitBytes, answers }: NotifyOptions) {
  const routes = new Map<string, EventDefinition>(EVENT_TABLE.map((e) => [basePath + e.path, e]));

  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const definition = routes.get(req.path);
    if (!definition) return next();
    if (req.method !== 'POST') return send(res, answers.notifyMethod, bodyLeftUnread(req));
    try {
      const startedAt = Date.now();
      const startedAtHr = performance.now();
      const body = await readBody(req, bodyLimitBytes);
      const result = await receiveNotification(deps, { definition, target: req.originalUrl, headers: req.headers, body, startedAt, startedAtHr });
      if (result.kind === 'acknowledged') send(res, answers.success);
      else if (result.kind === 'rejected') send(res, answers.rejected[result.class]);
      else send(res, answers.unavailable);
    } catch (err) {
      // Already answered and counted by the server's clientError handler, or the client is gone.
      if (err instanceof RequestAbandonedError) return;
      next(err);
    }
  };
}
