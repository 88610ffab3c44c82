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
 * labels and target subscriptions are all derived from this table. `inquiry` is the platform's
 * endpoint that answers for a notification that never came (incoming remittances have none).
 */
export const EVENT_TABLE = [
  {
    type: 'onboarding.result',
    path: '/api/v2/merch/onboard/notify',
    inquiry: '/api/v2/merch/onboard/inquiry',
    schema: onboardingResultSchema,
  },
  {
    type: 'collection_account.result',
    path: '/api/v2/merch/va/notify',
    inquiry: '/api/v2/merch/va/inquiry',
    schema: collectionAccountResultSchema,
  },
  { type: 'remittance.incoming', path: '/api/v2/remittance/notify', schema: remittanceIncomingSchema },
  {
    type: 'settlement.result',
    path: '/api/v2/trade-settle/notify',
    inquiry: '/api/v2/trade-settle/inquiry',
    schema: settlementResultSchema,
  },
  {
    type: 'payee.result',
    path: '/api/v2/merch/beneficiary/notify',
    inquiry: '/api/v2/merch/beneficiary/inquiry',
    schema: payeeResultSchema,
  },
  {
    type: 'fx.result',
    path: '/api/v2/fx/conversion/notify',
    inquiry: '/api/v2/fx/conversion/inquiry',
    schema: fxResultSchema,
  },
  {
    type: 'payment.result',
    path: '/api/v2/merch/pay/notify',
    inquiry: '/api/v2/merch/pay/inquiry',
    schema: paymentResultSchema,
  },
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

/** The platform's inquiry endpoint for an event type, or undefined where it has none (incoming remittances). */
export function inquiryPathOf(type: EventType): string | undefined {
  const definition = eventDefinition(type);
  return 'inquiry' in definition ? definition.inquiry : undefined;
}

/** The onboarding endpoints are called without `X-Merch-Id` (spec section 4). */
export function sendsMerchantId(type: EventType): boolean {
  return type !== 'onboarding.result';
}
