import type { JobsOptions } from 'bullmq';
import { backoffDelay } from '../forwarding/backoff';
import type { Target } from '../forwarding/target-schema';

/** Attempts of the fan-out step; with its backoff capped at a minute ({@link FANOUT_MAX_BACKOFF_MS}), about a day of retrying. */
export const FANOUT_ATTEMPTS = 1500;
export const FANOUT_MAX_BACKOFF_MS = 60_000;

/** Completed jobs are removed after this age or count; failed ones are kept for an operator. */
export interface Retention {
  completed: { ageSeconds: number; count: number };
}

/**
 * An event job: the fan-out step only writes to Redis; it retries for about a day (capped backoff,
 * {@link fanoutBackoff}) and a job that still fails is kept, never removed, so no acknowledged event vanishes.
 */
export function eventJobOptions(retention: Retention): JobsOptions {
  return {
    attempts: FANOUT_ATTEMPTS,
    backoff: { type: 'fanout' },
    removeOnComplete: { age: retention.completed.ageSeconds, count: retention.completed.count },
    removeOnFail: false,
  };
}

/**
 * A delivery job: the job id is the event id, so a retried fan-out cannot give a target a second
 * delivery; the target's own attempts and backoff ({@link deliveryBackoff}); dead letters (failed
 * jobs) stay until an operator replays or removes them.
 */
export function deliveryJobOptions(eventId: string, target: Target, retention: Retention): JobsOptions & { jobId: string } {
  return {
    jobId: eventId,
    attempts: target.maxAttempts,
    backoff: { type: 'target' },
    removeOnComplete: { age: retention.completed.ageSeconds, count: retention.completed.count },
    removeOnFail: false,
  };
}

/** The backoff of the `fanout` type: doubling from a second, capped at a minute. For the event workers' settings. */
export function fanoutBackoff(attemptsMade: number): number {
  return Math.min(1000 * 2 ** Math.max(0, attemptsMade - 1), FANOUT_MAX_BACKOFF_MS);
}

/** The backoff of the `target` type: the target's exponential backoff, obeying Retry-After. For its delivery worker's settings. */
export function deliveryBackoff(target: Target): (attemptsMade: number, type?: string, err?: Error) => number {
  return (attemptsMade, _type, err) => backoffDelay(attemptsMade, target.backoff, err);
}
