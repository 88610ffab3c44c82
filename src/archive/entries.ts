import { createHash } from 'node:crypto';
import {
  ARCHIVE_DELIVERY,
  ARCHIVE_EXPECTATION,
  type ArchiveDecision,
  type ArchiveRecord,
  type DeliveryOutcomeRecord,
  type ExpectationRecord,
} from '../model/archive';
import type { NotificationFacts } from './chain';
import type { DeliveryFields } from '../model/jobs';

/** One entry of the archive stream: its id and fields (`d` decision, `j` job id, `r` record, `b` job data). */
export interface StreamEntry {
  id: string;
  fields: Record<string, string>;
}

/**
 * A notification row before its place in a chain is known. The key's PEM is there when the entry carried
 * it (older entries) or once the archive's key registry gave it (see key-registry.ts).
 */
export type NewNotification = Omit<NotificationFacts, 'month' | 'seq'> & { keyPem?: string };

export interface Replay {
  entryId: string;
  scheme: string;
  replayKey: string;
  seenAt: Date;
}

/** What a batch of stream entries asks of the archive, sorted by kind, in stream order. */
export interface SortedEntries {
  notifications: NewNotification[];
  replays: Replay[];
  deliveries: DeliveryOutcomeRecord[];
  /** Expectations as changed, each change once (`rev`). */
  expectations: ExpectationRecord[];
  /** Entries that are none of these (written by something else): counted and dropped. */
  unreadable: string[];
}

/**
 * A notification row is one request: its replay key, path and receipt time name it, so writing the
 * same stream entry again (after a crash before its acknowledgement) finds the row already there.
 */
export function recordKeyOf(r: Pick<ArchiveRecord, 'scheme' | 'replayKey' | 'path' | 'receivedAt'>): string {
  return createHash('sha256').update([r.scheme, r.replayKey, r.path, r.receivedAt].join('\0')).digest('hex');
}

/** The archived outcome: what the platform was answered and why, from the record and the script's decision. */
export function outcomeOf(record: ArchiveRecord, decision: ArchiveDecision, jobId: string): string {
  if (decision === 'duplicate' || decision === 'conflict') return decision;
  if (record.kind === 'event') return 'accepted';
  // A quarantine job id other than this request's own: the event was quarantined before.
  if (jobId !== '' && jobId !== record.jobId) return 'duplicate';
  return record.reason === 'not_accepted' ? 'not_accepted' : 'quarantined';
}

export function sortEntries(entries: readonly StreamEntry[]): SortedEntries {
  const sorted: SortedEntries = { notifications: [], replays: [], deliveries: [], expectations: [], unreadable: [] };
  for (const { id, fields } of entries) {
    try {
      const decision = fields.d;
      const json = fields.r;
      if (json === undefined) throw new Error('no record');
      if (decision === ARCHIVE_DELIVERY) {
        sorted.deliveries.push(JSON.parse(json) as DeliveryOutcomeRecord);
      } else if (decision === ARCHIVE_EXPECTATION) {
        sorted.expectations.push(expectationRecordOf(JSON.parse(json)));
      } else if (decision === 'replay') {
        const r = JSON.parse(json) as ArchiveRecord;
        sorted.replays.push({ entryId: id, scheme: r.scheme, replayKey: r.replayKey, seenAt: new Date(r.receivedAt) });
      } else if (decision === 'added' || decision === 'duplicate' || decision === 'conflict') {
        const r = JSON.parse(json) as ArchiveRecord;
        sorted.notifications.push(notificationOf(r, decision, fields.j ?? '', fields.b));
        if (decision === 'added')
          for (const target of r.filtered ?? [])
            sorted.deliveries.push({ eventId: r.eventId, target, state: 'filtered', attempts: 0, at: r.receivedAt });
      } else {
        throw new Error(`unknown decision ${String(decision)}`);
      }
    } catch {
      sorted.unreadable.push(id);
    }
  }
  return sorted;
}

const EXPECTATION_FIELDS = ['id', 'eventType', 'environment', 'requestId', 'state', 'dueBy', 'createdAt', 'rev'];

/** An expectation entry's record: every value a string, the fields its row needs present. */
function expectationRecordOf(value: unknown): ExpectationRecord {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('not an object');
  const record = value as Record<string, unknown>;
  if (!Object.values(record).every((v) => typeof v === 'string')) throw new Error('a field is not a string');
  if (!EXPECTATION_FIELDS.every((f) => record[f])) throw new Error('a field is missing');
  return record as ExpectationRecord;
}

function notificationOf(
  r: ArchiveRecord,
  decision: ArchiveDecision,
  jobId: string,
  jobData: string | undefined,
): NewNotification {
  const { body, headers } = asReceived(r, jobData);
  return {
    recordKey: recordKeyOf(r),
    receivedAt: new Date(r.receivedAt),
    eventId: r.eventId,
    eventType: r.eventType,
    environment: r.environment,
    scheme: r.scheme,
    path: r.path,
    headers,
    body,
    signedTimestamp: r.timestamp,
    signedMerchantId: r.signedMerchantId ?? null,
    replayKey: r.replayKey,
    keyFingerprint: r.keyFingerprint,
    keyPem: r.keyPem,
    outcome: outcomeOf(r, decision, jobId),
    reason: r.kind === 'quarantine' ? (r.reason ?? 'invalid') : null,
    requestId: r.requestId ?? null,
  };
}

/** What the job data beside a record holds of the request as received. */
type AsReceived = Pick<
  DeliveryFields,
  'rawBody' | 'rawBodyEncoding' | 'signatureHeaders' | 'contentType' | 'merchantId'
>;

/**
 * The body bytes and the headers as received (every header the signature covers, plus `content-type`
 * and `x-merch-id` when present): from the job data the ingest script put beside the record, or from
 * the record itself in entries written before it did.
 */
function asReceived(r: ArchiveRecord, jobData: string | undefined): { body: Buffer; headers: Record<string, string> } {
  if (r.body !== undefined && r.headers !== undefined)
    return { body: Buffer.from(r.body, 'base64'), headers: r.headers };
  if (jobData === undefined) throw new Error('no job data');
  const job = JSON.parse(jobData) as Partial<AsReceived>;
  if (typeof job.rawBody !== 'string' || typeof job.signatureHeaders !== 'object' || job.signatureHeaders === null)
    throw new Error('the job data holds no body or headers');
  const headers: Record<string, string> = { ...job.signatureHeaders };
  if (job.contentType !== undefined) headers['content-type'] = job.contentType;
  if (job.merchantId !== undefined) headers['x-merch-id'] = job.merchantId;
  const body = Buffer.from(job.rawBody, job.rawBodyEncoding === 'base64' ? 'base64' : 'utf8');
  return { body, headers };
}
