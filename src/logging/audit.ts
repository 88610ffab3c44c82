import type { Logger } from './logger';

/** Who acted: `token`, `basic:<user>` (admin port) or `cli:<os user>`; and from where. */
export interface Actor {
  principal: string;
  from?: string;
}

/**
 * One line per operator action, the same from the admin API, the dashboard and the CLI: what was
 * done, to what (queue, target, ids, counts), by whom, from where and when.
 */
export function writeAudit(logger: Logger, actor: Actor, action: string, details: Record<string, unknown>): void {
  logger.info('admin action', {
    audit: true,
    action,
    principal: actor.principal,
    from: actor.from,
    ...details,
    at: new Date().toISOString(),
  });
}
