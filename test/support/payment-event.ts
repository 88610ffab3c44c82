import { eventIdFor } from '../../src/model/ids';
import type { EventJob } from '../../src/model/jobs';

/** A verified payment.result event job (as the receiver builds it), its body carrying `requestId`. */
export function paymentEvent(requestId: string): EventJob<'payment.result'> {
  const rawBody = JSON.stringify({ type: 'MERCH', data: { request_id: requestId, amount: '1.00' } });
  return {
    eventId: eventIdFor('payment.result', 'production', Buffer.from(rawBody)),
    eventType: 'payment.result',
    receivedAt: new Date().toISOString(),
    path: '/api/v2/merch/pay/notify',
    timestamp: Date.now(),
    nonce: `nonce-${requestId}`,
    scheme: 'current',
    environment: 'production',
    rawBody,
    rawBodyEncoding: 'utf8',
    signatureHeaders: {},
    payload: JSON.parse(rawBody) as EventJob<'payment.result'>['payload'],
  };
}
