import { randomBytes } from 'node:crypto';
import type { EventType } from '../model/event-table';

const STATUS_BY_TYPE: Record<EventType, Record<string, unknown>> = {
  'onboarding.result': { status: 'APPROVED', merchant_name: 'Example Trading Ltd' },
  'collection_account.result': {
    status: 'SUCCESS',
    account_no: '6222020200112233',
    currency: 'USD',
    bank_name: 'Example Bank',
  },
  'remittance.incoming': {
    amount: '1250.00',
    currency: 'USD',
    payer_name: 'ACME Corp',
    account_no: '6222020200112233',
  },
  'settlement.result': { status: 'SUCCESS', amount: '1250.00', currency: 'USD' },
  'payee.result': { status: 'APPROVED', payee_name: 'Jane Doe', account_number: 'DE89370400440532013000' },
  'fx.result': { status: 'SUCCESS', sell_currency: 'USD', buy_currency: 'EUR', sell_amount: '1000.00', rate: '0.9213' },
  'payment.result': { status: 'SUCCESS', amount: '980.00', currency: 'EUR', fee: '2.50' },
};

/** The merchant number the samples carry, as the documented `accept` example names it. */
export const SAMPLE_MERCHANT_NO = 'M100023';

/**
 * A plausible notification body of each type. The platform publishes no payload shapes, so these
 * are illustrations; only `type` on the remittance notification is fixed by the spec. Each names its
 * merchant in `data.merchant_no`, the field the documented `accept` example reads: a real body's
 * field may differ (`config check --from-quarantine` shows which one it is).
 */
export function sampleBody(type: EventType, opts: { timestamp?: number; merchantId?: string } = {}): string {
  const body: Record<string, unknown> = {
    type: type === 'remittance.incoming' ? 'INCOMING_REMITTANCE' : 'MERCH',
    ...(opts.timestamp !== undefined ? { timestamp: opts.timestamp } : {}),
    data: {
      request_id: `REQ${Date.now()}${randomBytes(3).toString('hex')}`,
      merchant_no: SAMPLE_MERCHANT_NO,
      ...(opts.merchantId ? { merch_id: opts.merchantId } : {}),
      ...STATUS_BY_TYPE[type],
    },
  };
  return JSON.stringify(body);
}
