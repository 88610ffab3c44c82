import type { DeliveryJob, DeliveryResult } from '../model/jobs';
import type { OutgoingRequest } from './build-request';

/**
 * How a target's deliveries leave this service: the worker builds the message (headers and body, the
 * same for every kind of target) and hands it over. `send` resolves only once the receiving side has
 * confirmed it, and otherwise throws TransientDeliveryError (retried with the target's backoff) or
 * PermanentDeliveryError (dead-lettered now).
 */
export interface DeliveryTransport {
  send(message: OutgoingRequest, job: DeliveryJob): Promise<DeliveryResult>;
  /** Lets sends under way end within `ms`, then cuts them (their jobs are retried). */
  close(ms: number): Promise<void>;
}
