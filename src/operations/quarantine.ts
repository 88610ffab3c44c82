import { createHash } from 'node:crypto';
import type { Logger } from '../logging/logger';
import { eventDefinition, type EventType } from '../model/event-table';
import { isRequestJobId } from '../model/ids';
import { decodeRawBody, eventJob, type QuarantineReason } from '../model/jobs';
import type { Producer } from '../pipeline/producer';
import type { QueueRegistry } from '../pipeline/queue-registry';
import { parsePayload } from '../receiving/parse-payload';
import { ServiceError } from '../model/errors';
import { createQuarantinedJobs, isUnreadable, type QuarantinedJob, type UnreadableJob } from './quarantined-jobs';

export type { UnreadableJob } from './quarantined-jobs';

/** A listed quarantine job: a readable one, or one that is not (its id and why: `unreadable`). */
export type QuarantinedView = ReadableView | UnreadableJob;

export interface ReadableView {
  id: string;
  eventId: string;
  eventType: string;
  /** The platform environment whose key verified it (absent on jobs kept before environments). */
  environment?: string;
  receivedAt: string;
  reason: QuarantineReason;
  errors: string[];
  bodyBytes: number;
}

/** With a corrected body: the SHA-256 (hex) of the body the platform signed and of the one queued instead. */
export interface Correction {
  originalSha256: string;
  correctedSha256: string;
}

export type QuarantineReplayOutcome =
  | ({ id: string; outcome: 'queued' | 'already_queued'; eventId: string } & Partial<Correction>)
  | { id: string; outcome: 'still_invalid'; errors: string[] }
  | { id: string; outcome: 'not_found' };

/** A corrected body was asked for, and `adminAllowCorrections` is off. 403. */
export class CorrectionsDisabledError extends ServiceError {
  readonly code = 'corrections_disabled';
  readonly status = 403;
  constructor() {
    super(
      'replaying with a corrected body is turned off (adminAllowCorrections: false, ADMIN_ALLOW_CORRECTIONS): a ' +
        'corrected body is not what the platform signed',
    );
  }
}

/** A corrected body stands for one notification, so a replay with one names exactly one id. 400. */
export class CorrectionForOneError extends ServiceError {
  readonly code = 'bad_request';
  readonly status = 400;
  constructor() {
    super('a corrected body replays exactly one quarantined notification');
  }
}

/** A replay named quarantine jobs that cannot be read: nothing named with them was replayed. 409. */
export class UnreadableJobError extends ServiceError {
  readonly code = 'unreadable_job';
  readonly status = 409;
  constructor(readonly jobs: readonly UnreadableJob[]) {
    super(`cannot replay ${jobs.map((j) => `${j.id} (unreadable: ${j.unreadable})`).join(', ')}; nothing was replayed`);
  }
  override answer() {
    return { ...super.answer(), unreadable: this.jobs.map((j) => ({ id: j.id, reason: j.unreadable })) };
  }
}

export interface QuarantineOptions {
  /** Whether a replay may carry a corrected body (`adminAllowCorrections`). @defaultValue false */
  allowCorrections?: boolean;
  /** Where a quarantine job that cannot be read is reported, at warn. */
  logger: Pick<Logger, 'warn'>;
}

/**
 * Quarantined notifications: verified, but not valid JSON or not matching their schema, not accepted
 * by their environment, or a legacy signature seen before for another type (see QuarantineReason).
 * Replay moves one into delivery as it is (after a schema fix, or when an operator judges it genuine)
 * or, when corrections are allowed, with a corrected body from the operator, marked `corrected` on
 * every forwarded request; it keeps its event id, so downstream `webhook-id` de-duplication still holds.
 */
export function createQuarantine(
  pipeline: Pick<QueueRegistry, 'quarantine'> & Pick<Producer, 'enqueueEvent'>,
  options: QuarantineOptions,
) {
  const jobs = createQuarantinedJobs(pipeline.quarantine, options.logger);

  async function list(limit = 100): Promise<QuarantinedView[]> {
    return (await jobs.list(limit)).map((job) => (isUnreadable(job) ? job : viewOf(job)));
  }

  async function replayOne(
    id: string,
    job: QuarantinedJob | undefined,
    correctedBody?: string,
  ): Promise<QuarantineReplayOutcome> {
    if (!job) return { id, outcome: 'not_found' };
    const { errors: _errors, reason: _reason, ...received } = job.data;
    const text = correctedBody ?? (received.rawBodyEncoding === 'utf8' ? received.rawBody : '');
    const parsed = parsePayload(eventDefinition(received.eventType), text);
    if (!parsed.ok) return { id, outcome: 'still_invalid', errors: parsed.errors };
    const correction =
      correctedBody === undefined
        ? undefined
        : { originalSha256: sha256Hex(decodeRawBody(received)), correctedSha256: sha256Hex(Buffer.from(text, 'utf8')) };
    const event = eventJob(
      {
        ...received,
        rawBody: text,
        rawBodyEncoding: 'utf8',
        // The platform's signature covers the original bytes only; a corrected body must not carry it,
        // and says it is corrected wherever it goes.
        ...(correction ? { signatureHeaders: {}, corrected: true as const } : {}),
      },
      parsed.payload,
    );
    const outcome = await pipeline.enqueueEvent(event, `quarantine:${id}`);
    await job.remove();
    return {
      id,
      outcome: outcome === 'accepted' ? 'queued' : 'already_queued',
      eventId: received.eventId,
      ...correction,
    };
  }

  async function replay(ids: readonly string[], correctedBody?: string): Promise<QuarantineReplayOutcome[]> {
    if (correctedBody !== undefined && !options.allowCorrections) throw new CorrectionsDisabledError();
    if (correctedBody !== undefined && ids.length !== 1) throw new CorrectionForOneError();
    // Every job is read before any is replayed, so a refusal leaves the request's readable ones
    // untouched; each id once, as a job read here is gone after its replay.
    const unique = [...new Set(ids)];
    const found = await Promise.all(unique.map((id) => (isRequestJobId(id) ? jobs.read(id) : undefined)));
    const unreadable = found.filter((job): job is UnreadableJob => job !== undefined && isUnreadable(job));
    if (unreadable.length) throw new UnreadableJobError(unreadable);
    const out: QuarantineReplayOutcome[] = [];
    for (const [i, id] of unique.entries()) {
      const job = found[i];
      out.push(await replayOne(id, job && !isUnreadable(job) ? job : undefined, correctedBody));
    }
    return out;
  }

  /** The readable quarantined notifications with their bodies as text (for `config check --from-quarantine`). */
  async function bodies(limit = 100): Promise<QuarantinedBody[]> {
    return (await jobs.list(limit))
      .filter((job): job is QuarantinedJob => !isUnreadable(job))
      .map(({ id, data }) => ({
        id: id ?? '',
        eventType: data.eventType,
        ...(data.environment ? { environment: data.environment } : {}),
        ...(data.merchantId !== undefined ? { merchantId: data.merchantId } : {}),
        body: decodeRawBody(data).toString('utf8'),
      }));
  }

  return { list, replay, bodies };
}

/** A quarantined notification's body, with what the receiver judged it by. */
export interface QuarantinedBody {
  id: string;
  eventType: EventType;
  environment?: string;
  merchantId?: string;
  body: string;
}

export type Quarantine = ReturnType<typeof createQuarantine>;

function viewOf(job: QuarantinedJob): ReadableView {
  const { data } = job;
  return {
    id: job.id ?? '',
    eventId: data.eventId,
    eventType: data.eventType,
    ...(data.environment ? { environment: data.environment } : {}),
    receivedAt: data.receivedAt,
    reason: data.reason ?? 'invalid',
    errors: data.errors,
    bodyBytes: Buffer.byteLength(data.rawBody, data.rawBodyEncoding),
  };
}

function sha256Hex(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}
