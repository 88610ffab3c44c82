import type { Request } from 'express';
import { writeAudit } from '../logging/audit';
import type { Logger } from '../logging/logger';
import { principalOf } from './auth';

/** An admin-port action's audit line: the authenticated principal and the caller's address. */
export function audit(logger: Logger, req: Request, action: string, details: Record<string, unknown>): void {
  writeAudit(logger, { principal: principalOf(req), from: req.socket.remoteAddress }, action, details);
}
