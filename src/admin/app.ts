import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import helmet from 'helmet';
import type { RedisClient } from '../redis/connect';
import type { Registry } from 'prom-client';
import type { Logger } from '../logging/logger';
import { ServiceError } from '../model/errors';
import type { DeadLetters } from '../operations/dead-letters';
import type { Quarantine } from '../operations/quarantine';
import { createBlockedKeys } from '../operations/blocked-keys';
import { createRecovery } from '../operations/recovery';
import type { Reloader } from '../operations/reload';
import type { Resender } from '../operations/resend';
import { configRoutes } from './routes/config';
import type { TargetControl } from '../operations/targets';
import type { Pipeline } from '../pipeline/pipeline';
import { createFailureWindow, type FailureWindowOptions } from './auth-failures';
import { hasCredentials, operatorsOnlyWrites, requireAdmin, type AdminCredentials } from './auth';
import { consoleRouter, CONSOLE_PATH } from './console/router';
import { dashboardOnFirstUse, DASHBOARD_PATH, withoutOtherOrigins } from './dashboard';
import { dashboardJobData } from './dashboard-masking';
import { dashboardWrites } from './dashboard-writes';
import { readiness } from './health';
import type { DurabilityRisk } from '../monitoring/redis-durability';
import { sameOriginWrites } from './same-origin';
import { deadLetterRoutes } from './routes/dead-letters';
import { eventRoutes } from './routes/events';
import { expectationRoutes } from './routes/expectations';
import type { Expectations } from '../reconciliation/expectations';
import type { ArchiveHistory } from '../archive/history';
import type { ArchiveStatus } from '../monitoring/archive-metrics';
import { quarantineRoutes } from './routes/quarantine';
import { queueRoutes } from './routes/queues';
import { targetRoutes } from './routes/targets';

export interface AdminDeps {
  credentials: AdminCredentials;
  redis: RedisClient;
  pipeline: Pipeline;
  /** What could lose an acknowledged event in Redis, once judged (monitoring/redis-durability.ts); /readyz shows it. */
  durabilityRisks?: () => readonly DurabilityRisk[] | undefined;
  deadLetters: DeadLetters;
  quarantine: Quarantine;
  targets: TargetControl;
  resender: Resender;
  /** Expected notifications: added by the merchant's systems, listed, cancelled. */
  expectations: Expectations;
  /** Re-reads the configuration (`POST /admin/api/config/reload`); absent where nothing can be reloaded. */
  reloader?: Reloader;
  registry: Registry;
  /** The OpenAPI 3.1 description of this service's notify paths and forwarded events, built when first asked for. */
  openapi: () => Record<string, unknown>;
  mask: (payload: unknown) => unknown;
  readOnlyDashboard: boolean;
  logger: Logger;
  /** The platform environments configured, for the console's filter. @defaultValue ['production'] */
  environments?: readonly string[];
  /** The evidence archive's history, when ARCHIVE_URL is set: events Redis has forgotten. */
  archive?: ArchiveHistory;
  /** The archive's state and backlog, for /readyz's detail. */
  archiveStatus?: () => Promise<ArchiveStatus>;
  /** Failed-login throttle. @defaultValue 10 failures per minute per address */
  loginFailures?: FailureWindowOptions;
}

/**
 * The admin app, for its own port. /healthz and /readyz are open (probes); the console, the dashboard,
 * /metrics and the JSON API need credentials, and with none configured they refuse to run open and
 * say why. A `viewer` reads; every change needs an `operator`.
 */
export function createAdminApp(deps: AdminDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get(
    '/readyz',
    readiness(deps.redis, deps.pipeline.quarantine, deps.logger, deps.durabilityRisks, deps.archiveStatus),
  );

  const guard = hasCredentials(deps.credentials)
    ? requireAdmin(deps.credentials, createFailureWindow(deps.loginFailures), deps.logger)
    : refuseUnconfigured(deps.logger);
  app.get('/metrics', guard, async (_req, res) => {
    res.setHeader('content-type', deps.registry.contentType);
    res.send(await deps.registry.metrics());
  });
  app.get('/admin/openapi.json', guard, helmet(), (_req, res) => {
    res.json(deps.openapi());
  });
  const onlyOperators = operatorsOnlyWrites(deps.logger);
  // Bull Board's page uses inline styles, so it gets a looser CSP than the JSON API; still only our
  // own origin, so the browser does not fetch the web fonts its page links to from another site.
  const dashboardCsp = helmet({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'", "'unsafe-inline'"],
        imgSrc: ["'self'", 'data:'],
        fontSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        frameAncestors: ["'none'"],
        objectSrc: ["'none'"],
      },
    },
    strictTransportSecurity: false,
  });
  const showJobData = dashboardJobData(deps.mask);
  const dashboard = dashboardOnFirstUse(() => deps.pipeline.allQueues(), {
    readOnly: deps.readOnlyDashboard,
    showJobData,
    mask: deps.mask,
  });
  deps.reloader?.onApplied(() => dashboard.showQueues());
  app.use(
    DASHBOARD_PATH,
    guard,
    sameOriginWrites,
    onlyOperators,
    dashboardCsp,
    withoutOtherOrigins,
    dashboardWrites({ readOnly: deps.readOnlyDashboard, logger: deps.logger, showJobData }),
    dashboard.router,
  );

  const api = express.Router();
  api.use(guard, sameOriginWrites, onlyOperators, helmet(), express.json({ limit: '1mb' }));
  api.use('/queues', queueRoutes(deps.pipeline, deps.targets, deps.logger));
  const blockedKeys = createBlockedKeys(deps.pipeline);
  const recovery = createRecovery({
    deadLetters: deps.deadLetters,
    quarantine: deps.quarantine,
    targets: deps.targets,
    blockedKeys,
    resender: deps.resender,
    logger: deps.logger,
  });
  api.use('/events', eventRoutes(deps.pipeline, deps.mask, recovery, deps.expectations, deps.archive));
  api.use('/config', configRoutes(deps.reloader));
  api.use('/dead-letters', deadLetterRoutes(deps.deadLetters, recovery));
  api.use('/quarantine', quarantineRoutes(deps.quarantine, recovery));
  api.use('/targets', targetRoutes(deps.targets, blockedKeys, recovery));
  api.use('/expectations', expectationRoutes(deps.expectations));
  app.use('/admin/api', api);
  app.use(
    CONSOLE_PATH,
    guard,
    sameOriginWrites,
    consoleRouter({
      pipeline: deps.pipeline,
      mask: deps.mask,
      recovery,
      deadLetters: deps.deadLetters,
      blockedKeys,
      expectations: deps.expectations,
      environments: deps.environments ?? ['production'],
      logger: deps.logger,
      archive: deps.archive,
    }),
  );

  app.use((_req, res) => {
    res.status(404).json({ error: 'not_found' });
  });
  app.use(adminErrorHandler(deps.logger));
  return app;
}

/**
 * The admin API's one error handler: a ServiceError is answered with its status and its answer
 * (`error` is its code); any other error with a 4xx status (a body the JSON parser refused) as a bad
 * request; anything else is logged and answered 500 without detail.
 */
function adminErrorHandler(logger: Logger) {
  return (err: Error & { status?: number }, _req: Request, res: Response, _next: NextFunction): void => {
    if (err instanceof ServiceError) {
      if (err.status >= 500) logger.error('admin request failed', { error: err.message, code: err.code });
      return void res.status(err.status).json(err.answer());
    }
    const status = err.status && err.status < 500 ? err.status : 500;
    if (status === 500) logger.error('admin request failed', { error: err.message, stack: err.stack });
    res.status(status).json({
      error: status === 500 ? 'internal' : 'bad_request',
      message: status === 500 ? 'internal error' : err.message,
    });
  };
}

function refuseUnconfigured(logger: Logger) {
  logger.warn('admin routes disabled: set ADMIN_TOKEN, or ADMIN_USER and ADMIN_PASSWORD');
  return (_req: Request, res: Response): void => {
    res.status(503).json({
      error: 'admin_disabled',
      message: 'no admin credential configured: set ADMIN_TOKEN, or ADMIN_USER and ADMIN_PASSWORD',
    });
  };
}
