import type { Job } from 'bullmq';
import {
  isDropped,
  type DeliveryFailure,
  type DeliveryJob,
  type DeliveryResult,
  type SeriesStart,
  type SeriesTrigger,
} from '../model/jobs';

/**
 * The whole story of one delivery (an event to one target), kept in its job's log, which BullMQ keeps
 * across a retry: every failed attempt (written by the worker as it fails), and, when an operator
 * starts a new attempt series (a dead letter's replay, or a resend), the attempt that had delivered
 * (a completed job's return value, which the retry clears) and a mark saying who started the series
 * and when. Nothing is written on the notify or delivery path: a delivery that is never replayed or
 * resent reads as one series, started by the notification's receipt.
 */

/** A delivered attempt as the log keeps it once a later series would clear the job's return value. */
export type DeliveredAttempt = DeliveryResult & { outcome: 'delivered'; at: string; attempt: number; target: string };

/** An attempt whose transform returned null: nothing was sent, and the delivery is done. */
export interface DroppedAttempt {
  outcome: 'dropped';
  at: string;
  attempt: number;
  target: string;
  latencyMs: number;
}

export type AttemptView = ((DeliveryFailure & { outcome: 'failed' }) | DeliveredAttempt | DroppedAttempt) & {
  /** Which series (1 for the first) the attempt belongs to; `attempt` counts from 1 again in each. */
  series: number;
};

export interface SeriesView {
  /** 1 for the first series. */
  n: number;
  trigger: SeriesTrigger;
  /** Who started it: `platform` for the receipt, else the operator. */
  by: string;
  at: string;
  attempts: AttemptView[];
}

type LogEntry = SeriesStart | DeliveredAttempt | DroppedAttempt | DeliveryFailure;

function isSeriesStart(e: LogEntry): e is SeriesStart {
  return 'series' in e && 'by' in e;
}

/**
 * Marks the start of a new series on an existing delivery job, before the caller retries it: the
 * attempt that delivered (when the job completed) and who starts the series. Written before the retry,
 * so no attempt of the new series can precede its mark in the log.
 */
export async function markSeriesStart(
  job: Job<DeliveryJob>,
  trigger: SeriesStart['series'],
  by: string,
): Promise<void> {
  const returned = job.returnvalue as DeliveryResult | null | undefined;
  if (isDropped(returned) && job.finishedOn) {
    const dropped: DroppedAttempt = {
      outcome: 'dropped',
      at: new Date(job.finishedOn).toISOString(),
      attempt: job.attemptsMade,
      target: job.data.target,
      latencyMs: returned.latencyMs,
    };
    await job.log(JSON.stringify(dropped));
  } else if (returned && typeof returned.latencyMs === 'number' && job.finishedOn) {
    const delivered: DeliveredAttempt = {
      ...(returned.status === undefined ? {} : { status: returned.status }),
      ...(returned.confirmed === undefined ? {} : { confirmed: returned.confirmed }),
      latencyMs: returned.latencyMs,
      outcome: 'delivered',
      at: new Date(job.finishedOn).toISOString(),
      attempt: job.attemptsMade,
      target: job.data.target,
    };
    await job.log(JSON.stringify(delivered));
  }
  const mark: SeriesStart = { series: trigger, by, at: new Date().toISOString() };
  await job.log(JSON.stringify(mark));
}

/**
 * The series of one delivery, oldest first, from its job's log, the job's data (a job that a resend
 * added says so in `firstSeries`) and, for a completed job, the attempt that delivered.
 */
export function deliveryStory(
  job: Pick<Job<DeliveryJob>, 'data' | 'returnvalue' | 'finishedOn' | 'attemptsMade'>,
  state: string,
  logs: readonly string[],
): SeriesView[] {
  const first = job.data.firstSeries;
  let current: SeriesView = first
    ? { n: 1, trigger: first.series, by: first.by, at: first.at, attempts: [] }
    : { n: 1, trigger: 'received', by: 'platform', at: job.data.receivedAt, attempts: [] };
  const series = [current];
  for (const line of logs) {
    let entry: LogEntry;
    try {
      entry = JSON.parse(line) as LogEntry;
    } catch {
      continue; // not ours
    }
    // Not an attempt or a mark: written by hand, or cut short.
    if (typeof entry !== 'object' || entry === null) continue;
    if (isSeriesStart(entry)) {
      current = { n: series.length + 1, trigger: entry.series, by: entry.by, at: entry.at, attempts: [] };
      series.push(current);
    } else if ('outcome' in entry && (entry.outcome === 'delivered' || entry.outcome === 'dropped')) {
      current.attempts.push({ ...entry, series: current.n });
    } else {
      current.attempts.push({ ...(entry as DeliveryFailure), outcome: 'failed', series: current.n });
    }
  }
  const returned = job.returnvalue as DeliveryResult | null | undefined;
  if (state === 'completed' && isDropped(returned) && job.finishedOn) {
    current.attempts.push({
      outcome: 'dropped',
      at: new Date(job.finishedOn).toISOString(),
      attempt: job.attemptsMade,
      target: job.data.target,
      latencyMs: returned.latencyMs,
      series: current.n,
    });
  } else if (state === 'completed' && returned && job.finishedOn) {
    current.attempts.push({
      ...returned,
      outcome: 'delivered',
      at: new Date(job.finishedOn).toISOString(),
      attempt: job.attemptsMade,
      target: job.data.target,
      series: current.n,
    });
  }
  return series;
}

/**
 * How many attempts a delivery made across all its series (BullMQ counts the current series only):
 * the number the event view, the CLI and the console's list all show.
 */
export function attemptsAcrossSeries(
  job: Pick<Job<DeliveryJob>, 'data' | 'returnvalue' | 'finishedOn' | 'attemptsMade'>,
  state: string,
  logs: readonly string[],
): number {
  return deliveryStory(job, state, logs).reduce((n, s) => n + s.attempts.length, 0);
}
