import type { JobsOptions } from 'bullmq';
import type { Target } from './target-schema';

/**
 * Attempts of the fan-out step; with its backoff capped at a minute ({@link FANOUT_MAX_BACKOFF_MS}), about a day of
 * retrying.
 */
export const FANOUT_ATTEMPTS = 1500;
export const FANOUT_MAX_BACKOFF_MS = 60_000;

/** Completed jobs are removed after this age or count; failed ones are kept for an operator. */
export interface Retention {
  completed: { ageSeconds: number; count: number };
}

/**
 * An event job: the fan-out step only writes to Redis; it retries for about a day (capped backoff,
 * the `fanout` backoff type) and a job that still fails is kept, never removed, so no acknowledged event vanishes.
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
 * delivery; the target's own attempts and backoff (the `target` backoff type); dead letters (failed
 * jobs) stay until an operator replays or removes them.
 */
export function deliveryJobOptions(
  eventId: string,
  target: Target,
  retention: Retention,
): JobsOptions & { jobId: string } {
  return {
    jobId: eventId,
    attempts: target.maxAttempts,
    backoff: { type: 'target' },
    removeOnComplete: { age: retention.completed.ageSeconds, count: retention.completed.count },
    removeOnFail: false,
  };
}
