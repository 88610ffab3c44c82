import express, { type Express, type Request, type Response } from 'express';
import type { Logger } from '../logging/logger';
import type { ReceiveDeps } from '../receiving/receive';
import { send } from './answer';
import { errorHandler, notFound } from './errors';
import { notifyMiddleware } from './notify-routes';
import { publicAnswers, type PublicAnswers } from './public-answers';
import { bodyLeftUnread } from './read-body';
import type { BodyBudget } from './body-budget';

export interface AppDeps extends ReceiveDeps {
  logger: Logger;
  /** Prefix in front of every notify path. @defaultValue '' */
  basePath: string;
  /** @defaultValue 262144 (256 KiB) */
  bodyLimitBytes: number;
  /** Notify requests from addresses it refuses get 403. @defaultValue undefined (any address) */
  sourceAllowed?: (address: string | undefined) => boolean;
  /** Express's `trust proxy`: whose X-Forwarded-For decides `req.ip`. @defaultValue undefined (none) */
  trustProxy?: string[];
  /** The process's budget for bodies not yet verified. @defaultValue undefined (unbounded) */
  bodyBudget?: BodyBudget;
}

/**
 * The public app: the seven notify paths and liveness, nothing else. Never listens. No Express
 * router and no per-request middleware: every answer is one of the prepared ones (see
 * public-answers.ts), so each carries the envelope and the same security headers.
 */
export function createApp(deps: AppDeps): Express {
  const answers = publicAnswers(deps.bodyLimitBytes);
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  if (deps.trustProxy !== undefined) app.set('trust proxy', deps.trustProxy);
  app.use(
    notifyMiddleware(deps, {
      basePath: deps.basePath,
      bodyLimitBytes: deps.bodyLimitBytes,
      answers,
      sourceAllowed: deps.sourceAllowed,
      bodyBudget: deps.bodyBudget,
    }),
  );
  app.use(liveness(answers));
  app.use(notFound(answers));
  app.use(errorHandler(deps.logger, answers));
  return app;
}

/** Handled here rather than by `app.get`, whose router would answer OPTIONS itself, without our headers. */
function liveness(answers: PublicAnswers) {
  return (req: Request, res: Response, next: () => void): void => {
    if (req.path !== '/healthz') return next();
    if (req.method === 'GET' || req.method === 'HEAD') return send(res, answers.health);
    send(res, answers.healthMethod, bodyLeftUnread(req));
  };
}
