import { z } from 'zod';

/**
 * The platform publishes no payload shapes for its notifications (spec section 6: "not shown"), and it
 * adds fields without notice. Each schema therefore requires only what the spec names and keeps every
 * unknown field (`z.looseObject`), so a new platform field never turns a good notification into a
 * quarantined one.
 */
const notification = z.looseObject({
  data: z.unknown().optional(),
});

export const onboardingResultSchema = notification;
export const collectionAccountResultSchema = notification;
/** Spec section 2: the incoming remittance notification carries `type` = `INCOMING_REMITTANCE`. */
export const remittanceIncomingSchema = notification.extend({ type: z.literal('INCOMING_REMITTANCE') });
export const settlementResultSchema = notification;
export const payeeResultSchema = notification;
export const fxResultSchema = notification;
export const paymentResultSchema = notification;
