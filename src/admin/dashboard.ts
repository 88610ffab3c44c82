import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import type { Router } from 'express';

export const DASHBOARD_PATH = '/admin/queues';

export interface DashboardOptions {
  /** Bull Board's own read-only mode: hides retry, promote, clean and add, and refuses them with 405. */
  readOnly: boolean;
  /** What a job's data and return value show: the admin API's masking. */
  showJobData: (data: unknown) => unknown;
  mask: (value: unknown) => unknown;
}

/** Bull Board over every queue of the service, every job's data masked as the admin API masks it. */
export function dashboardRouter(queues: Iterable<Queue>, opts: DashboardOptions): Router {
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(DASHBOARD_PATH);
  const adapters = [...queues].map((q) => {
    const adapter = new BullMQAdapter(q, { readOnlyMode: opts.readOnly });
    adapter.setFormatter('data', opts.showJobData);
    adapter.setFormatter('returnValue', opts.mask);
    return adapter;
  });
  createBullBoard({ queues: adapters, serverAdapter, options: { uiConfig: { boardTitle: 'Webhook receiver' } } });
  return serverAdapter.getRouter() as Router;
}
