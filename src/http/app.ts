import express, { type Express } from 'express';
import helmet from 'helmet';
import type { Logger } from '../logging/logger';
import type { ReceiveDeps } from '../receiving/receive';
import { errorHandler, notFound } from './errors';
import { notifyMiddleware } from './notify-routes';

export interface AppDeps extends ReceiveDeps {
  logger: Logger;
  /** Prefix in front of every notify path. @defaultValue '' */
  basePath: string;
  /** @defaultValue 1 MiB */
  bodyLimitBytes: number;
}

/** The public app: the seven notify paths and liveness, nothing else. Never listens. */
export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(notifyMiddleware(deps, deps.basePath, deps.bodyLimitBytes)); // sends helmet's headers itself
  app.use(helmet());
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.use(notFound);
  app.use(errorHandler(deps.logger));
  return app;
}
