import type { Job } from 'bullmq';
import { z } from 'zod';
import type { Logger } from '../logging/logger';
import { EVENT_TYPES, type EventType } from '../model/event-table';
import type { QuarantineJob } from '../model/jobs';
import type { QuarantineQueue } from '../model/queues';

/** A stored quarantine job that is not one: shown with its id and why, so one bad job hides no other. */
export interface UnreadableJob {
  id: string;
  unreadable: string;
}

export type QuarantinedJob = Job<QuarantineJob, unknown, EventType>;

/** What a quarantine job may hold: jobs kept before environments and reasons have neither. */
type StoredQuarantineJob = Omit<QuarantineJob, 'environment'> & { environment?: string };

// Typed against QuarantineJob, so a field added there must be added here too (optional, if older jobs lack it).
const storedQuarantineJob: z.ZodType<StoredQuarantineJob> = z.object({
  eventId: z.string(),
  eventType: z.enum(EVENT_TYPES as [EventType, ...EventType[]]),
  receivedAt: z.string(),
  path: z.string(),
  timestamp: z.number(),
  nonce: z.string(),
  scheme: z.enum(['current', 'legacy']),
  merchantId: z.string().optional(),
  environment: z.string().optional(),
  corrected: z.literal(true).optional(),
  rawBody: z.string(),
  rawBodyEncoding: z.enum(['utf8', 'base64']),
  contentType: z.string().optional(),
  signatureHeaders: z.record(z.string(), z.string()),
  trace: z.string().optional(),
  reason: z.enum(['invalid', 'not_accepted', 'signature_reused']).optional(),
  errors: z.array(z.string()),
});

/**
 * Reads quarantine jobs one by one. A job whose stored fields are not JSON, or whose data is not a
 * quarantine job (written by hand, by another tool, or damaged), is answered as unreadable and logged
 * at warn with its id and why, instead of failing the listing or the replay that met it. A Redis error
 * is no property of the job: it still fails the call. A job removed meanwhile is left out.
 */
export function createQuarantinedJobs(queue: QuarantineQueue, logger: Pick<Logger, 'warn'>) {
  function unreadable(id: string, reason: string): UnreadableJob {
    logger.warn('quarantined job unreadable', { queue: queue.name, jobId: id, reason });
    return { id, unreadable: reason };
  }

  async function read(id: string): Promise<QuarantinedJob | UnreadableJob | undefined> {
    let job: QuarantinedJob | undefined;
    try {
      job = await queue.getJob(id);
    } catch (err) {
      // BullMQ parses the stored data and options as it reads a job: nothing else in it throws SyntaxError.
      if (err instanceof SyntaxError) return unreadable(id, `its stored job is not JSON: ${err.message}`);
      throw err;
    }
    if (!job) return undefined;
    const checked = storedQuarantineJob.safeParse(job.data, { reportInput: true });
    return checked.success
      ? job
      : unreadable(id, `its data is not a quarantine job: ${describeIssues(checked.error.issues)}`);
  }

  /** The jobs in the states a quarantined notification waits in, at most `limit` of each state. */
  async function list(limit: number): Promise<(QuarantinedJob | UnreadableJob)[]> {
    const ids = await queue.getRanges(['waiting', 'delayed', 'failed'], 0, limit - 1);
    const jobs = await Promise.all(ids.map(read));
    return jobs.filter((j) => j !== undefined);
  }

  return { read, list };
}

export function isUnreadable(job: QuarantinedJob | UnreadableJob): job is UnreadableJob {
  return 'unreadable' in job;
}

/**
 * Why the data is not a quarantine job, short enough for a table cell: the fields it lacks, then at most three others.
 */
function describeIssues(issues: readonly z.core.$ZodIssue[]): string {
  const isMissing = (i: z.core.$ZodIssue) => i.path.length > 0 && i.input === undefined;
  const missing = issues.filter(isMissing).map((i) => i.path.join('.'));
  const wrong = issues.filter((i) => !isMissing(i));
  const parts = [
    ...(missing.length ? [`no ${missing.join(', ')}`] : []),
    ...wrong.slice(0, 3).map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message)),
    ...(wrong.length > 3 ? [`and ${wrong.length - 3} more`] : []),
  ];
  return parts.join('; ');
}
