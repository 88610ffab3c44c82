import type { NextFunction, Request, Response } from 'express';
import type { Logger } from '../logging/logger';
import { audit } from './audit';
import { principalOf } from './auth';

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface DashboardWriteOptions {
  readOnly: boolean;
  logger: Logger;
  /** How a job's data is shown (masked) in audit lines. */
  showJobData: (data: unknown) => unknown;
}

interface DashboardRoute {
  route: string;
  queue?: string;
  jobId?: string;
}

/**
 * Bull Board's API routes are `/api/queues[/<queue>[/<job id>]/<action>…]`; what an audit line needs
 * from them is the queue and the job acted on.
 */
export function describeDashboardRoute(method: string, path: string): DashboardRoute {
  const parts = path
    .split('/')
    .filter(Boolean)
    .map((p) => safeDecode(p));
  const route = `${method} ${path}`;
  if (parts[0] !== 'api' || parts[1] !== 'queues' || parts.length < 4) return { route };
  const queue = parts[2];
  const jobActions = new Set([
    'retry',
    'clean',
    'promote',
    'update-data',
    'delay',
    'priority',
    'remove-unprocessed-children',
  ]);
  const isJobRoute = parts.length === 5 && jobActions.has(parts[4]!);
  return { route, queue, jobId: isJobRoute ? parts[3] : undefined };
}

function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/**
 * The dashboard can add a job to a delivery queue, which the worker then signs with the target's
 * secret: a forged `payment.result` would reach the merchant looking genuine. So it is read-only
 * unless the operator turned writes on (every write refused here, whatever Bull Board's own
 * read-only mode covers), and with writes on every write is audited with what it touched.
 */
export function dashboardWrites(opts: DashboardWriteOptions) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (SAFE.has(req.method)) return next();
    const target = describeDashboardRoute(req.method, req.path);
    if (opts.readOnly) {
      opts.logger.warn('dashboard write refused: the dashboard is read-only', {
        ...target,
        principal: principalOf(req),
        from: req.socket.remoteAddress,
      });
      return void res.status(403).json({
        error: 'read_only',
        message:
          'the dashboard is read-only: use the admin API or the CLI (ADMIN_READ_ONLY_DASHBOARD=false turns dashboard ' +
          'writes on)',
      });
    }
    let answer: unknown;
    const json = res.json.bind(res);
    res.json = (body: unknown) => {
      answer = body;
      return json(body);
    };
    // 'close' comes whether or not the answer reached the caller; the change may have happened either way.
    res.once('close', () => {
      const body = req.body as { name?: unknown; data?: unknown } | undefined;
      audit(opts.logger, req, 'dashboard.write', {
        ...target,
        jobId: target.jobId ?? addedJobId(answer),
        status: res.statusCode,
        answered: res.writableFinished,
        ...(body?.data !== undefined ? { jobName: body.name, data: opts.showJobData(body.data) } : {}),
      });
    });
    next();
  };
}

function addedJobId(answer: unknown): string | undefined {
  const job = (answer as { job?: { id?: unknown } } | undefined)?.job;
  return typeof job?.id === 'string' ? job.id : undefined;
}
