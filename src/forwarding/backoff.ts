import { TransientDeliveryError } from './delivery-errors';
import { FANOUT_MAX_BACKOFF_MS } from '../model/job-options';
import type { Target } from '../model/target-schema';

/** The longest Retry-After we obey; beyond it a target's answer is more likely a mistake than a plan. */
const RETRY_AFTER_CAP_MS = 24 * 3600 * 1000;

/**
 * Exponential backoff with jitter between half and all of the step, capped at `maxMs`. A Retry-After
 * from the target wins when it asks for longer, so we never come back sooner than it asked.
 */
export function backoffDelay(
  attemptsMade: number,
  backoff: Target['backoff'],
  err?: Error,
  random = Math.random,
): number {
  const step = Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.max(0, attemptsMade - 1));
  const jittered = Math.round(step / 2 + random() * (step / 2));
  const retryAfter = err instanceof TransientDeliveryError ? err.retryAfterMs : undefined;
  return retryAfter === undefined ? jittered : Math.max(Math.min(retryAfter, RETRY_AFTER_CAP_MS), jittered);
}

/** Retry-After in seconds or as an HTTP date. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) return undefined;
  if (/^\d+$/.test(text.trim())) return Number(text.trim()) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** The backoff of the `fanout` type: doubling from a second, capped at a minute. For the event workers' settings. */
export function fanoutBackoff(attemptsMade: number): number {
  return Math.min(1000 * 2 ** Math.max(0, attemptsMade - 1), FANOUT_MAX_BACKOFF_MS);
}

/**
 * The backoff of the `target` type: the target's exponential backoff, obeying Retry-After. For its delivery worker's
 * settings.
 */
export function deliveryBackoff(target: Target): (attemptsMade: number, type?: string, err?: Error) => number {
  return (attemptsMade, _type, err) => backoffDelay(attemptsMade, target.backoff, err);
}
