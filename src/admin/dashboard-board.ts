import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import type { Router } from 'express';

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
  basePath: string,
  opts: DashboardOptions,
): { router: Router; showQueues(queues: Iterable<Queue>): void } {
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(basePath);
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
