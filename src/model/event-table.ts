import type { z } from 'zod';
import {
  collectionAccountResultSchema,
  fxResultSchema,
  onboardingResultSchema,
  paymentResultSchema,
  payeeResultSchema,
  remittanceIncomingSchema,
  settlementResultSchema,
} from './event-schemas';

/**
 * The single source of truth for what the platform sends us: routes, schemas, queue names, metric
 * labels and target subscriptions are all derived from this table.
 */
export const EVENT_TABLE = [
  { type: 'onboarding.result', path: '/api/v2/merch/onboard/notify', schema: onboardingResultSchema },
  { type: 'collection_account.result', path: '/api/v2/merch/va/notify', schema: collectionAccountResultSchema },
  { type: 'remittance.incoming', path: '/api/v2/remittance/notify', schema: remittanceIncomingSchema },
  { type: 'settlement.result', path: '/api/v2/trade-settle/notify', schema: settlementResultSchema },
  { type: 'payee.result', path: '/api/v2/merch/beneficiary/notify', schema: payeeResultSchema },
  { type: 'fx.result', path: '/api/v2/fx/conversion/notify', schema: fxResultSchema },
  { type: 'payment.result', path: '/api/v2/merch/pay/notify', schema: paymentResultSchema },
] as const;

type Table = typeof EVENT_TABLE;
export type EventType = Table[number]['type'];
export type EventDefinition = Table[number];

/** The payload type of each event, inferred from its schema. */
export type EventPayloadMap = { [E in Table[number] as E['type']]: z.infer<E['schema']> };

export const EVENT_TYPES: readonly EventType[] = EVENT_TABLE.map((e) => e.type);

export function isEventType(value: string): value is EventType {
  return (EVENT_TYPES as readonly string[]).includes(value);
}

export function eventDefinition(type: EventType): EventDefinition {
  const found = EVENT_TABLE.find((e) => e.type === type);
  if (!found) throw new Error(`unknown event type ${type}`);
  return found;
}
