import { eventDefinition } from '../events/table';
import type { EventJob } from '../pipeline/jobs';
import { isRequestJobId } from '../pipeline/ids';
import type { Pipeline } from '../pipeline/pipeline';
import { parsePayload } from '../receiving/parse-payload';

export interface QuarantinedView {
  id: string;
  eventId: string;
  eventType: string;
  receivedAt: string;
  errors: string[];
  bodyBytes: number;
}

export type QuarantineReplayOutcome =
  | { id: string; outcome: 'queued' | 'already_queued'; eventId: string }
  | { id: string; outcome: 'still_invalid'; errors: string[] }
  | { id: string; outcome: 'not_found' };

/**
 * Quarantined notifications: verified, but not valid JSON or not matching their schema. Replay moves
 * one into its event queue, either as it is (after a schema fix was deployed) or with a corrected body
 * from the operator; it keeps its event id, so downstream `webhook-id` de-duplication still holds.
 */
export function createQuarantine(pipeline: Pick<Pipeline, 'quarantine' | 'enqueueEvent'>) {
  async function list(limit = 100): Promise<QuarantinedView[]> {
    const jobs = await pipeline.quarantine.getJobs(['waiting', 'delayed', 'failed'], 0, limit - 1);
    return jobs.map((job) => ({
      id: job.id ?? '',
      eventId: job.data.eventId,
      eventType: job.data.eventType,
      receivedAt: job.data.receivedAt,
      errors: job.data.errors,
      bodyBytes: Buffer.byteLength(job.data.rawBody, job.data.rawBodyEncoding),
    }));
  }

  async function replayOne(id: string, correctedBody?: string): Promise<QuarantineReplayOutcome> {
    const job = isRequestJobId(id) ? await pipeline.quarantine.getJob(id) : undefined;
    if (!job) return { id, outcome: 'not_found' };
    const { errors: _errors, ...received } = job.data;
    const text = correctedBody ?? (received.rawBodyEncoding === 'utf8' ? received.rawBody : '');
    const parsed = parsePayload(eventDefinition(received.eventType), text);
    if (!parsed.ok) return { id, outcome: 'still_invalid', errors: parsed.errors };
    const event = {
      ...received,
      rawBody: text,
      rawBodyEncoding: 'utf8',
      // The platform's signature covers the original bytes only; a corrected body must not carry it.
      signatureHeaders: correctedBody === undefined ? received.signatureHeaders : {},
      payload: parsed.payload,
    } as EventJob;
    const outcome = await pipeline.enqueueEvent(event, `quarantine:${id}`);
    await job.remove();
    return { id, outcome: outcome === 'accepted' ? 'queued' : 'already_queued', eventId: received.eventId };
  }

  async function replay(ids: readonly string[], correctedBody?: string): Promise<QuarantineReplayOutcome[]> {
    if (correctedBody !== undefined && ids.length !== 1) throw new Error('a corrected body replays exactly one quarantined notification');
    const out: QuarantineReplayOutcome[] = [];
    for (const id of ids) out.push(await replayOne(id, correctedBody));
    return out;
  }

  return { list, replay };
}

export type Quarantine = ReturnType<typeof createQuarantine>;
