import type { ArchiveRecord, Evidence } from '../model/archive';
import type { EventJob, QuarantineJob } from '../model/jobs';

/**
 * The archive record of a notification (see model/archive.ts), as JSON: what the archive row needs
 * beyond the job data the ingest script puts beside it. A quarantined one names the job id a new
 * quarantine job gets; an event, the targets its filters left out.
 *
 * Built once per acknowledged notification, on the answer's path: one literal of a fixed shape, whose
 * absent fields are `undefined` (JSON leaves them out). Spreading the evidence and the optional fields
 * into it made the record three times as slow to build and to serialise.
 */
export function archiveRecordOf(
  job: EventJob | QuarantineJob,
  evidence: Evidence,
  { quarantineJobId, filtered = [] }: { quarantineJobId?: string; filtered?: readonly string[] } = {},
): string {
  const record: ArchiveRecord = {
    keyFingerprint: evidence.keyFingerprint,
    signedMerchantId: evidence.signedMerchantId,
    requestId: evidence.requestId,
    kind: quarantineJobId === undefined ? 'event' : 'quarantine',
    eventId: job.eventId,
    eventType: job.eventType,
    environment: job.environment,
    scheme: job.scheme,
    path: job.path,
    replayKey: job.nonce,
    timestamp: job.timestamp,
    receivedAt: job.receivedAt,
    reason: 'reason' in job ? (job.reason ?? 'invalid') : undefined,
    jobId: quarantineJobId,
    filtered: filtered.length > 0 ? [...filtered] : undefined,
  };
  return JSON.stringify(record);
}
