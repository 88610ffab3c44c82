import { ServiceError } from '../model/errors';

/** Redis did not confirm the job in time (down, slow or refusing writes): nothing may be acknowledged. */
export class EnqueueUnavailableError extends ServiceError {
  readonly code = 'unavailable';
  readonly status = 503;
  /** replicas: Redis stored it but too few replicas confirmed it (REDIS_MIN_REPLICAS_ACK); redis: anything else. */
  readonly reason: 'redis' | 'replicas';
  constructor(message: string, options?: { cause?: unknown; reason?: 'redis' | 'replicas' }) {
    super(message, options);
    this.reason = options?.reason ?? 'redis';
  }
}

/**
 * A failure of our own code or of what it was given (a stack overflow, a type error), not of Redis:
 * reported as itself (500, its own log line), never as Redis being unavailable.
 */
export function isProgrammingError(err: unknown): boolean {
  return (
    err instanceof RangeError || err instanceof TypeError || err instanceof ReferenceError || err instanceof SyntaxError
  );
}

/**
 * A job of an event that cannot be read (its stored job is not JSON, or its data not an event's job): where it is, and
 * why.
 */
export interface UnreadableJob {
  queue: string;
  id: string;
  reason: string;
}

/**
 * Every job holding an event is unreadable: there is nothing of it to show. 409, as a replay naming an unreadable
 * quarantine job.
 */
export class UnreadableEventError extends ServiceError {
  readonly code = 'unreadable_job';
  readonly status = 409;
  constructor(
    readonly eventId: string,
    readonly jobs: readonly UnreadableJob[],
  ) {
    super(
      `event ${eventId} cannot be shown: every job holding it is unreadable: ` +
        `${jobs.map((j) => `${j.queue}/${j.id} (${j.reason})`).join(', ')}`,
    );
  }
  override answer() {
    return { ...super.answer(), unreadable: this.jobs.map((j) => ({ ...j })) };
  }
}
