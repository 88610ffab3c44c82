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
  return err instanceof RangeError || err instanceof TypeError || err instanceof ReferenceError || err instanceof SyntaxError;
}
