import type { Queue } from 'bullmq';
import type { DashboardOptions, dashboardRouter } from './dashboard-board';
import type { NextFunction, Request, Response } from 'express';

export const DASHBOARD_PATH = '/admin/queues';

/**
 * Bull Board over every queue of the service (dashboard-board.ts), built with the first request that
 * reaches it: a process nobody opens the dashboard of never loads Bull Board, its templates and their
 * dependencies, which would otherwise stay in its heap for good. `showQueues` gives a built board the
 * current list after a configuration reload (a board built later reads it then).
 */
export function dashboardOnFirstUse(
  queues: () => Iterable<Queue>,
  opts: DashboardOptions,
): { router: (req: Request, res: Response, next: NextFunction) => void; showQueues(): void } {
  let board: Promise<ReturnType<typeof dashboardRouter>> | undefined;
  const built = () =>
    (board ??= import('./dashboard-board').then((m) => m.dashboardRouter(queues(), DASHBOARD_PATH, opts)));
  return {
    router: (req, res, next) => void built().then((b) => b.router(req, res, next), next),
    showQueues: () => void board?.then((b) => b.showQueues(queues())),
  };
}

const OTHER_ORIGIN_LINK = /<link\b[^>]*\bhref="https?:\/\/[^"]*"[^>]*>\s*/gi;

/**
 * Bull Board's page links a style sheet of web fonts on another site; the admin port serves nothing
 * that makes a browser ask another origin, so the link is taken out of the page (its own system
 * fonts are used instead). The CSP in front refuses such a load as well, should a new version add one.
 */
export function withoutOtherOrigins(_req: Request, res: Response, next: NextFunction): void {
  const send = res.send.bind(res);
  res.send = (body?: unknown) => {
    const isHtml = typeof body === 'string' && /^\s*<!DOCTYPE html>/i.test(body);
    return send(isHtml ? body.replace(OTHER_ORIGIN_LINK, '') : body);
  };
  next();
}
