import type { Request } from 'express';
import type { Logger } from '../logging/logger';

/** One line per admin action: what, which items, when, from where, and by whom. */
export function audit(logger: Logger, req: Request, action: string, details: Record<string, unknown>): void {
  logger.info('admin action', {
    audit: true,
    action,
    ...details,
    at: new Date().toISOString(),
    from: req.socket.remoteAddress,
    by: req.headers.authorization?.startsWith('Basic ') ? 'basic-auth user' : 'bearer token',
  });
}
