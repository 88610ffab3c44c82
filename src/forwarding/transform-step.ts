import { UnrecoverableError } from 'bullmq';
import { decodeRawBody, type DeliveryJob } from '../model/jobs';
import type { Target } from '../model/target-schema';
import { transformLimitsOf } from '../transform/check';
import { startSandbox, TransformError, type Sandbox } from '../transform/sandbox';
import { transformCodeOf } from '../transform/source';
import type { FailureFacts } from './failure';

/**
 * A transform that threw, ran out of time or memory, or returned something not JSON: the delivery is
 * dead-lettered now (a retry would fail the same way); after a fix and a reload, replaying it sends it.
 */
export class TransformDeliveryError extends UnrecoverableError {
  readonly facts: FailureFacts;
  constructor(message: string, latencyMs: number) {
    super(`transform_error: ${message}`);
    this.name = 'TransformDeliveryError';
    this.stack = '';
    this.facts = { errorClass: 'transform_error', latencyMs };
  }
}

export interface Shaper {
  /** The body to send in place of the standard envelope (JSON text), or null: the transform drops it. */
  shape(job: DeliveryJob): Promise<string | null>;
  close(): Promise<void>;
}

/** The target's transform, compiled once for this worker in its own sandbox; undefined when it has none. */
export function createShaper(target: Target): Shaper | undefined {
  if (target.transform === undefined) return undefined;
  let sandbox: Sandbox | undefined;
  let unreadable: string | undefined;
  try {
    sandbox = startSandbox(transformCodeOf(target), transformLimitsOf(target));
    // Compiled as the worker starts, not on its first event (a fault is that event's error).
    void sandbox.compiled();
  } catch (err) {
    unreadable = (err as Error).message;
  }
  return {
    async shape(job) {
      const started = performance.now();
      if (!sandbox) throw new TransformDeliveryError(unreadable ?? 'no transform', 0);
      const raw = job.rawBodyEncoding === 'utf8' ? job.rawBody : decodeRawBody(job).toString('utf8');
      const event = {
        id: job.eventId,
        type: job.eventType,
        timestamp: job.receivedAt,
        environment: job.environment ?? null,
        merchantId: job.merchantId ?? null,
      };
      try {
        return await sandbox.run({ event, raw });
      } catch (err) {
        if (err instanceof TransformError)
          throw new TransformDeliveryError(err.message, Math.round(performance.now() - started));
        throw err;
      }
    },
    close: async () => sandbox?.close(),
  };
}
