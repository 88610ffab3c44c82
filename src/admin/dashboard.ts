import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import type { Router } from 'express';

export const DASHBOARD_PATH = '/admin/queues';

/** Bull Board over every queue of the service; read-only hides retry, promote and remove. */
export function dashboardRouter(queues: Iterable<Queue>, readOnly: boolean): Router {
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(DASHBOARD_PATH);
  createBullBoard({
    queues: [...queues].map((q) => new BullMQAdapter(q, { readOnlyMode: readOnly })),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Webhook receiver' } },
  });
  return serverAdapter.getRouter() as Router;
}
