import { createHash, randomBytes } from 'node:crypto';
import { DEFAULT_ENVIRONMENT } from './environments';

function sha256Hex(...parts: (string | Buffer)[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest('hex');
}

/**
 * The event id: the same body on the same notify path from the same platform environment is one
 * event, whatever its nonce and whatever unsigned header (`X-Merch-Id`) came with it, so a copy
 * re-sent under another header cannot become a second event. The environment takes part so that a
 * sandbox body can never stand for a production one; `production` hashes as it did before it had a
 * name, so its events keep the ids they always had.
 */
export function eventIdFor(eventType: string, environment: string, rawBody: Buffer): string {
  const named = environment === DEFAULT_ENVIRONMENT ? '' : `env:${environment}`;
  return `evt_${sha256Hex(eventType, '\n', named, '\n', rawBody).slice(0, 40)}`;
}

/**
 * A job id unique to this request whose first part names its replay key (a hash of it), so an
 * operator can tie a job to the nonce or signature it came with. Whether a request is a replay is
 * decided by the replay binding in the ingest script, not by this id.
 */
export function jobIdFor(replayKey: string): string {
  return `${sha256Hex(replayKey).slice(0, 16)}-${uniqueSuffix()}`;
}

// Unique across processes (random per process) and within one (a counter): a random draw per
// request cost a syscall each and showed up in the ingest profile.
const PROCESS_TAG = randomBytes(5).toString('hex');
let counter = 0;
function uniqueSuffix(): string {
  counter = (counter + 1) % Number.MAX_SAFE_INTEGER;
  return `${PROCESS_TAG}${counter.toString(36)}`;
}

const EVENT_ID = /^evt_[0-9a-f]{40}$/;
const JOB_ID = /^[0-9a-f]{16}-[0-9a-z]+$/;

/**
 * Whether a text can be an event id. A lookup checks first: BullMQ keeps a queue's own records beside
 * its jobs (`meta`, `events`, `id`, `stalled-check`, …), so reading any other text as a job id can
 * hit one of them (a Redis WRONGTYPE error, or `meta` read as a job).
 */
export function isEventId(text: string): boolean {
  return EVENT_ID.test(text);
}

/** Whether a text can be a job id from {@link jobIdFor} (a quarantined notification's), for the same reason. */
export function isRequestJobId(text: string): boolean {
  return JOB_ID.test(text);
}
