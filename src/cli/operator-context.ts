import type { Config } from '../config/schema';
import type { Actor } from '../logging/audit';
import type { Logger } from '../logging/logger';
import { createBlockedKeys } from '../operations/blocked-keys';
import { createDeadLetters } from '../operations/dead-letters';
import { createQuarantine } from '../operations/quarantine';
import { createRecovery, type Recovery } from '../operations/recovery';
import { createResender } from '../operations/resend';
import { createTargetControl } from '../operations/targets';
import type { Pipeline } from '../pipeline/pipeline';

/** What an operator command gets: the service's configuration, its output, and its audit trail. */
export interface OperatorContext {
  config: Config;
  out: (line: string) => void;
  /** Audit lines, in the service's log format. */
  logger: Logger;
  actor: Actor;
}

/** The audited recoveries over the command's queues, as the admin API has them. */
export function recoveryFor(ctx: OperatorContext, pipeline: Pipeline): Recovery {
  return createRecovery({
    deadLetters: createDeadLetters(pipeline),
    quarantine: createQuarantine(pipeline, { allowCorrections: ctx.config.adminAllowCorrections, logger: ctx.logger }),
    targets: createTargetControl(pipeline),
    blockedKeys: createBlockedKeys(pipeline),
    resender: createResender(pipeline),
    logger: ctx.logger,
  });
}
