import { UnrecoverableError } from 'bullmq';
import type { FailureFacts } from './failure';
import { ServiceError } from '../model/errors';

// A delivery's outcomes, HTTP and broker alike. A permanent one is BullMQ's UnrecoverableError (the
// worker's base for a fault that is not retried, as the error base documents); a transient one a ServiceError.

/**
 * A failure worth another attempt; `retryAfterMs` comes from the target's Retry-After header. Its
 * message is the readable summary and it carries no stack trace: BullMQ stores an error's stack on
 * the job and the dashboard shows it, and a frame list says nothing about why a target answered 503.
 */
export class TransientDeliveryError extends ServiceError {
  readonly code = 'delivery_failed';
  /** Were it ever answered: the target (a gateway) failed. */
  readonly status = 502;
  constructor(
    message: string,
    /** The target's HTTP status, when it answered. */
    readonly targetStatus?: number,
    readonly retryAfterMs?: number,
    readonly responseExcerpt?: string,
    readonly facts?: FailureFacts,
  ) {
    super(message);
    this.stack = '';
  }
}

/**
 * A permanent failure (a 4xx the target does not want retried): the delivery is dead-lettered now. Stackless,
 * like TransientDeliveryError.
 */
export class PermanentDeliveryError extends UnrecoverableError {
  constructor(
    message: string,
    /** The target's HTTP status (0: a broker refused). */
    readonly targetStatus: number,
    readonly responseExcerpt: string,
    readonly facts?: FailureFacts,
  ) {
    super(message);
    this.name = 'PermanentDeliveryError';
    this.stack = '';
  }
}
