import type { Pool } from 'pg';
import { ServiceError } from '../model/errors';
import { SCHEMA } from './migrations';
import { evidenceOf, type EvidenceFiles } from './export';
import { deliveriesOf, selectRows, type ArchivedDelivery, type ArchivedNotification } from './rows';
import { archivedExpectation, archivedExpectationsOf } from './expectation-rows';
import type { ExpectationRecord } from '../model/archive';

/**
 * An event as the archive tells it: each notification row that carried it (first receipt first) and
 * how its deliveries ended.
 */
export interface ArchivedEvent {
  rows: ArchivedNotification[];
  /** The last end of each target's delivery. */
  deliveries: ArchivedDelivery[];
}

/** The archive could not be read (PostgreSQL down): answered 503, the lookup in Redis having found nothing. */
export class ArchiveUnavailableError extends ServiceError {
  readonly code = 'archive_unavailable';
  readonly status = 503;
  constructor(cause: unknown) {
    super(`the archive cannot be read now (${(cause as Error).message})`, { cause });
    Object.setPrototypeOf(this, new.target.prototype);
  }
}

/**
 * History beyond Redis: what the event view, the request_id lookup and the console ask once Redis has
 * forgotten an event.
 */
export interface ArchiveHistory {
  event(eventId: string): Promise<ArchivedEvent | undefined>;
  eventIdsForRequest(requestId: string): Promise<string[]>;
  /** The evidence files of the notification an event id or request_id names (ArchivedNotFound when none). */
  evidence(id: string): Promise<EvidenceFiles>;
  /** An expectation's fields as last archived. */
  expectation(id: string): Promise<ExpectationRecord | undefined>;
  /** The archived expectations of a request_id, newest first. */
  expectationsOfRequest(requestId: string): Promise<ExpectationRecord[]>;
}

const MAX_ROWS = 50;

export function createArchiveHistory(pool: Pool): ArchiveHistory {
  async function read<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      throw new ArchiveUnavailableError(err);
    }
  }
  return {
    event: (eventId) =>
      read(async () => {
        const rows = await selectRows(pool, 'event_id = $1', [eventId], MAX_ROWS);
        if (rows.length === 0) return undefined;
        const ends = (await deliveriesOf(pool, [eventId])).get(eventId) ?? [];
        const last = new Map<string, ArchivedDelivery>();
        for (const end of ends) last.set(end.target, end);
        return { rows, deliveries: [...last.values()] };
      }),
    eventIdsForRequest: (requestId) =>
      read(async () => {
        const { rows } = await pool.query<{ event_id: string }>(
          `SELECT DISTINCT event_id FROM ${SCHEMA}.notifications
            WHERE request_id = $1 ORDER BY event_id LIMIT ${MAX_ROWS}`,
          [requestId],
        );
        return rows.map((r) => r.event_id);
      }),
    evidence: (id) => evidenceOf(pool, id),
    expectation: (id) => read(() => archivedExpectation(pool, id)),
    expectationsOfRequest: (requestId) => read(() => archivedExpectationsOf(pool, requestId)),
  };
}
