import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import type { NextFunction, Request, Response, Router } from 'express';

export const DASHBOARD_PATH = '/admin/queues';

export interface DashboardOptions {
  /** Bull Board's own read-only mode: hides retry, promote, clean and add, and refuses them with 405. */
  readOnly: boolean;
  /** What a job's data and return value show: the admin API's masking. */
  showJobData: (data: unknown) => unknown;
  mask: (value: unknown) => unknown;
}

/**
 * Bull Board over every queue of the service, every job's data masked as the admin API masks it.
 * `showQueues` replaces the list, after a configuration reload added or removed a target.
 */
export function dashboardRouter(
  queues: Iterable<Queue>,
  opts: DashboardOptions,
): { router: Router; showQueues(queues: Iterable<Queue>): void } {
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(DASHBOARD_PATH);
  const adapt = (list: Iterable<Queue>) =>
    [...list].map((q) => {
      const adapter = new BullMQAdapter(q, { readOnlyMode: opts.readOnly });
      adapter.setFormatter('data', opts.showJobData);
      adapter.setFormatter('returnValue', opts.mask);
      return adapter;
    });
  const board = createBullBoard({
    queues: adapt(queues),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Webhook receiver' } },
  });
  return { router: serverAdapter.getRouter() as Router, showQueues: (list) => board.replaceQueues(adapt(list)) };
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
