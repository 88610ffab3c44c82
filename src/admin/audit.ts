import type { Request } from 'express';
import { writeAudit, type Actor } from '../logging/audit';
import type { Logger } from '../logging/logger';
import { principalOf } from './auth';

/** Who made an admin-port request: the principal it authenticated as, and its address. */
export function actorOf(req: Request): Actor {
  return { principal: principalOf(req), from: req.socket.remoteAddress };
}

/** An admin-port action's audit line. */
export function audit(logger: Logger, req: Request, action: string, details: Record<string, unknown>): void {
  writeAudit(logger, actorOf(req), action, details);
}
