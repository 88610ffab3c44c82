import type { ExpectationSettings } from '../config/api-schema';
import { eventDefinition } from '../model/event-table';
import type { EventLookup, FoundEvent } from '../pipeline/lookup';
import { parsePayload } from '../receiving/parse-payload';
import { requestIdAt, requestIdPathOf } from './arrivals';
import type { Expectation } from './expectation';

/**
 * Which of the notifications that arrived before an expectation was added (the event ids the request-id
 * index held for its request_id) meets it: a notification of its type and environment, not quarantined and
 * not built from an inquiry's answer, whose body carries its request_id at the type's path. Read from the
 * event's jobs: one whose jobs are gone is not found, and the expectation's inquiry is then the net.
 */
export async function earlierArrival(
  lookup: Pick<EventLookup, 'findEvent'>,
  settings: Pick<ExpectationSettings, 'requestIdPaths'>,
  expectation: Pick<Expectation, 'eventType' | 'environment' | 'requestId'>,
  eventIds: readonly string[],
): Promise<string | undefined> {
  const path = requestIdPathOf(settings, expectation.eventType);
  for (const eventId of eventIds) {
    const found = await lookup.findEvent(eventId);
    if (!found || found.kind === 'quarantine') continue;
    const data = found.job.data;
    if (data.eventType !== expectation.eventType || data.environment !== expectation.environment) continue;
    if (data.source === 'inquiry') continue;
    if (requestIdAt(payloadOf(found), path) === expectation.requestId) return eventId;
  }
  return undefined;
}

/** The event's payload: its event job's, or a delivery job's body parsed as at receipt. */
function payloadOf(found: Exclude<FoundEvent, { kind: 'quarantine' }>): unknown {
  const data = found.job.data;
  if ('payload' in data) return data.payload;
  if (data.rawBodyEncoding !== 'utf8') return undefined;
  const parsed = parsePayload(eventDefinition(data.eventType), data.rawBody);
  return parsed.ok ? parsed.payload : undefined;
}
