import type { ApiEnvironment } from '../config/api-environments';
import type { Logger } from '../logging/logger';
import { eventDefinition } from '../model/event-table';
import { eventIdFor } from '../model/ids';
import { eventJob, type Received } from '../model/jobs';
import type { Producer } from '../pipeline/producer';
import { parsePayload } from '../receiving/parse-payload';
import type { Expectation } from './expectation';
import type { InquiryResult } from './inquiry';
import type { ExpectationStore } from './store';

/**
 * Delivers an event built from the platform's final, verified answer to the type's targets, marked
 * `source: inquiry` (envelope and `x-webhook-source`), as a notification would be: the same producer,
 * routes, filters and transforms. Its replay key is the answer's nonce, which no notification shares.
 */
export async function deliverFromInquiry(
  producer: Pick<Producer, 'enqueueEvent'>,
  store: Pick<ExpectationStore, 'note'>,
  logger: Logger,
  expectation: Expectation,
  environment: ApiEnvironment,
  answer: Extract<InquiryResult, { kind: 'answered' }>,
  atMs: number,
): Promise<void> {
  const line = { expectationId: expectation.id, requestId: expectation.requestId, eventType: expectation.eventType };
  const parsed = parsePayload(eventDefinition(expectation.eventType), answer.body);
  if (!parsed.ok) {
    logger.error('inquiry answer not delivered: not a valid event body', { ...line, errors: parsed.errors });
    return;
  }
  const received: Received = {
    eventId: eventIdFor(expectation.eventType, environment.name, Buffer.from(answer.body, 'utf8')),
    eventType: expectation.eventType,
    receivedAt: new Date(atMs).toISOString(),
    path: answer.path,
    timestamp: Number(Object.entries(answer.signatureHeaders).find(([k]) => k.endsWith('-timestamp'))?.[1] ?? atMs),
    nonce: answer.nonce,
    scheme: 'current',
    environment: environment.name,
    source: 'inquiry',
    rawBody: answer.body,
    rawBodyEncoding: 'utf8',
    contentType: 'application/json',
    signatureHeaders: answer.signatureHeaders,
  };
  const outcome = await producer.enqueueEvent(eventJob(received, parsed.payload), `inquiry:${answer.nonce}`);
  await store.note(expectation.id, { inquiryEventId: received.eventId });
  logger.info('event built from the inquiry answer queued for delivery', {
    ...line,
    eventId: received.eventId,
    outcome,
  });
}
