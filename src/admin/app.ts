import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import helmet from 'helmet';
import type { Logger } from '../logging/logger';
import type { DeadLetters } from '../operations/dead-letters';
import { hasCredentials, requireAdmin, type AdminCredentials } from './auth';
import { deadLetterRoutes } from './routes/dead-letters';

export interface AdminDeps {
  credentials: AdminCredentials;
  deadLetters: DeadLetters;
  logger: Logger;
}

/**
 * The admin app, for the separate admin port. Every route under /admin and /metrics needs
 * credentials; with none configured those routes refuse to run open and say why.
 */
export function createAdminApp(deps: AdminDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(helmet());
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  const api = express.Router();
  if (hasCredentials(deps.credentials)) {
    api.use(requireAdmin(deps.credentials));
  } else {
    deps.logger.warn('admin routes disabled: set ADMIN_TOKEN, or ADMIN_USER and ADMIN_PASSWORD');
    api.use((_req, res) => {
      res.status(503).json({ error: 'admin_disabled', message: 'no admin credential configured: set ADMIN_TOKEN, or ADMIN_USER and ADMIN_PASSWORD' });
    });
  }
  api.use(express.json({ limit: '100kb' }));
  api.use('/api/dead-letters', deadLetterRoutes(deps.deadLetters, deps.logger));
  app.use('/admin', api);

  app.use((_req, res) => {
    res.status(404).json({ error: 'not_found' });
  });
  app.use((err: Error & { status?: number }, _req: Request, res: Response, _next: NextFunction) => {
    const status = err.status && err.status < 500 ? err.status : 500;
    if (status === 500) deps.logger.error('admin request failed', { error: err.message, stack: err.stack });
    res.status(status).json({ error: status === 500 ? 'internal' : 'bad_request', message: status === 500 ? 'internal error' : err.message });
  });
  return app;
}
