import { createHash } from 'node:crypto';
import { eventDefinition } from '../model/event-table';
import { isRequestJobId } from '../model/ids';
import { decodeRawBody, eventJob, type QuarantineReason } from '../model/jobs';
import type { Producer } from '../pipeline/producer';
import type { QueueRegistry } from '../pipeline/queue-registry';
import { parsePayload } from '../receiving/parse-payload';
import { ServiceError } from '../model/errors';

export interface QuarantinedView {
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
    super('replaying with a corrected body is turned off (adminAllowCorrections: false, ADMIN_ALLOW_CORRECTIONS): a corrected body is not what the platform signed');
  }
}

export interface QuarantineOptions {
  /** Whether a replay may carry a corrected body (`adminAllowCorrections`). @defaultValue false */
  allowCorrections: boolean;
}

/**
 * Quarantined notifications: verified, but not valid JSON or not matching their schema, not accepted
 * by their environment, or a legacy signature seen before for another type (see QuarantineReason).
 * Replay moves one into delivery as it is (after a schema fix, or when an operator judges it genuine)
 * or, when corrections are allowed, with a corrected body from the operator, marked `corrected` on
 * every forwarded request; it keeps its event id, so downstream `webhook-id` de-duplication still holds.
 */
export function createQuarantine(pipeline: Pick<QueueRegistry, 'quarantine'> & Pick<Producer, 'enqueueEvent'>, options: QuarantineOptions = { allowCorrections: false }) {
  async function list(limit = 100): Promise<QuarantinedView[]> {
    const jobs = await pipeline.quarantine.getJobs(['waiting', 'delayed', 'failed'], 0, limit - 1);
    return jobs.map((job) => ({
      id: job.id ?? '',
      eventId: job.data.eventId,
      eventType: job.data.eventType,
      ...(job.data.environment ? { environment: job.data.environment } : {}),
      receivedAt: job.data.receivedAt,
      reason: job.data.reason ?? 'invalid',
      errors: job.data.errors,
      bodyBytes: Buffer.byteLength(job.data.rawBody, job.data.rawBodyEncoding),
    }));
  }

  async function replayOne(id: string, correctedBody?: string): Promise<QuarantineReplayOutcome> {
    const job = isRequestJobId(id) ? await pipeline.quarantine.getJob(id) : undefined;
    if (!job) return { id, outcome: 'not_found' };
    const { errors: _errors, reason: _reason, ...received } = job.data;
    const text = correctedBody ?? (received.rawBodyEncoding === 'utf8' ? received.rawBody : '');
    const parsed = parsePayload(eventDefinition(received.eventType), text);
    if (!parsed.ok) return { id, outcome: 'still_invalid', errors: parsed.errors };
    const correction = correctedBody === undefined ? undefined : { originalSha256: sha256Hex(decodeRawBody(received)), correctedSha256: sha256Hex(Buffer.from(text, 'utf8')) };
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
    return { id, outcome: outcome === 'accepted' ? 'queued' : 'already_queued', eventId: received.eventId, ...correction };
  }

  async function replay(ids: readonly string[], correctedBody?: string): Promise<QuarantineReplayOutcome[]> {
    if (correctedBody !== undefined && !options.allowCorrections) throw new CorrectionsDisabledError();
    if (correctedBody !== undefined && ids.length !== 1) throw new Error('a corrected body replays exactly one quarantined notification');
    const out: QuarantineReplayOutcome[] = [];
    for (const id of ids) out.push(await replayOne(id, correctedBody));
    return out;
  }

  return { list, replay };
}

export type Quarantine = ReturnType<typeof createQuarantine>;

function sha256Hex(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}
