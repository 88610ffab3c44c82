import { isUtf8 } from 'node:buffer';
import type { ArchivedEvent } from '../archive/history';
import { eventFactsOf } from '../model/event-facts';
import type { EventView } from './event-view';

/** The archive's own facts of an event shown from it. */

/**
 * An event Redis has forgotten, from the archive: the first receipt's facts and body (masked like a
 * live event's payload; a body that is not JSON is shown as its size), and each target's final
 * delivery state with its attempts. Attempt-by-attempt history stays in Redis only.
 */
export function archivedView({ rows, deliveries }: ArchivedEvent, mask: (p: unknown) => unknown): EventView {
  const first = rows[0]!;
  const merchantId = first.headers['x-merch-id'];
  const payload = payloadOf(first.body, mask);
  return {
    source: 'archive',
    archived: {
      id: first.id,
      outcome: first.outcome,
      scheme: first.scheme,
      keyFingerprint: first.keyFingerprint,
      receipts: rows.reduce((n, r) => n + r.receipts, 0),
      rows: rows.length,
      lastSeen: new Date(Math.max(...rows.map((r) => r.lastSeen.getTime()))).toISOString(),
    },
    eventId: first.eventId,
    queue: 'archive',
    jobId: first.id,
    state: 'archived',
    eventType: first.eventType,
    receivedAt: first.receivedAt.toISOString(),
    path: first.path,
    ...(merchantId !== undefined ? { merchantId } : {}),
    environment: first.environment,
    ...(first.reason !== null ? { quarantineReason: first.reason } : {}),
    payload,
    facts: eventFactsOf(payload),
    deliveries: deliveries.map((d) => ({
      target: d.target,
      state: d.state,
      attemptsMade: d.attempts,
      totalAttempts: d.attempts,
      ...(d.state === 'delivered' ? { deliveredAt: d.endedAt } : {}),
      endedAt: d.endedAt,
      failedAttempts: [],
      attempts: [],
      series: [],
    })),
  };
}

function payloadOf(body: Buffer, mask: (p: unknown) => unknown): unknown {
  if (!isUtf8(body)) return `(${body.length} bytes, not UTF-8)`;
  try {
    return mask(JSON.parse(body.toString('utf8')));
  } catch {
    return `(${body.length} bytes, not JSON)`;
  }
}
