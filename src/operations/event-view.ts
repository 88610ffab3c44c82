import type { AttemptView, SeriesView } from '../forwarding/delivery-story';
import type { EventFacts } from '../model/event-facts';
import type { DeliveryFailure } from '../model/jobs';
import type { EventCopies } from '../pipeline/lookup';

/** What an operator is shown of one event, live from Redis or from the archive once Redis forgot it. */
export interface ArchivedFacts {
  /** The first receipt's row, `YYYY-MM/seq`. */
  id: string;
  outcome: string;
  scheme: string;
  keyFingerprint: string;
  /** Requests that carried it: its rows (the first receipt and later duplicates) and their replays. */
  receipts: number;
  rows: number;
  lastSeen: string;
}

export interface DeliveryView {
  target: string;
  /**
   * The delivery job's BullMQ state; `filtered`: the target's filter left the event out, so it has no
   * job; `dropped`: the target's transform returned null, so nothing was sent; `unreadable`: its job
   * cannot be read (`unreadable` says why), so nothing of it is shown.
   */
  state: string;
  /** Why its job cannot be read, in state `unreadable`. */
  unreadable?: string;
  /** The attempts of the current series (BullMQ's count, which a replay or resend starts again). */
  attemptsMade: number;
  /** Every attempt of every series: the count the CLI and the console show. */
  totalAttempts: number;
  deliveredAt?: string;
  result?: unknown;
  failedReason?: string;
  /** When it ended, for a delivery the archive tells. */
  endedAt?: string;
  /** Every failed attempt, oldest first, of every series. */
  failedAttempts: DeliveryFailure[];
  /** Every attempt of every series, oldest first, each with its series' number. */
  attempts: AttemptView[];
  /**
   * The attempt series, oldest first: the first started by the receipt (or by the resend that added the delivery), each
   * later one by a replay or resend, with who and when.
   */
  series: SeriesView[];
}

export interface EventView {
  /** Set when Redis no longer holds the event and the archive answered (see archivedView). */
  source?: 'archive';
  /** What the archive keeps of it, when it answered. */
  archived?: ArchivedFacts;
  eventId: string;
  queue: string;
  jobId: string;
  state: string;
  eventType: string;
  receivedAt: string;
  path: string;
  merchantId?: string;
  /** The platform environment whose key verified it. */
  environment?: string;
  /** Set when an operator replayed it with a corrected body. */
  corrected?: true;
  /**
   * The trace the notification was received in (every delivery attempt is a span of it); set when tracing was on at
   * receipt.
   */
  traceId?: string;
  /** Why it is quarantined, when it is. */
  quarantineReason?: string;
  /**
   * Copies of the notification that arrived after the first (duplicates and refused replays, see
   * EventCopies); absent for a quarantined one, whose copies BullMQ's de-duplication decides uncounted.
   */
  copies?: EventCopies;
  payload?: unknown;
  /** The platform's request id, the amount and the currency, read from the body (masked as the payload is). */
  facts: EventFacts;
  /**
   * A quarantined notification's body as received when it is not JSON (so it has no `payload`): its
   * text, or Base64 when it is not UTF-8 (`bodyEncoding`). Shown as text, never interpreted.
   */
  body?: string;
  bodyEncoding?: 'utf8' | 'base64';
  errors?: string[];
  deliveries: DeliveryView[];
}
