import { z } from 'zod';
import { EVENT_TYPES, type EventType } from '../model/event-table';

/**
 * `open`: not yet due; `overdue`: due and not met (inquiries under way, or none possible); `met`: the
 * notification arrived; `missing_notification`: the platform says the outcome is final, and its
 * notification never came; `unresolved`: no final answer before the horizon; `cancelled`.
 */
export const EXPECTATION_STATES = [
  'open',
  'overdue',
  'met',
  'missing_notification',
  'unresolved',
  'cancelled',
] as const;
export type ExpectationState = (typeof EXPECTATION_STATES)[number];

export function isExpectationState(value: unknown): value is ExpectationState {
  return (EXPECTATION_STATES as readonly unknown[]).includes(value);
}

/** One expectation as kept and listed. */
export interface Expectation {
  id: string;
  eventType: EventType;
  environment: string;
  requestId: string;
  dueBy: string;
  createdAt: string;
  createdBy: string;
  state: ExpectationState;
  updatedAt: string;
  /** Attempts claimed so far (each is one inquiry at most). */
  attempts: number;
  /** The notification (event id) that met it. */
  metBy?: string;
  /** What the last inquiry found, in words (a refusal's reason, the platform's answer not final, ...). */
  lastOutcome?: string;
  /** The event built from the platform's final answer and delivered, where the configuration opts in. */
  inquiryEventId?: string;
  /** A notification that arrived after it settled without one. */
  lateEventId?: string;
  cancelledBy?: string;
  /** `archive` when Redis no longer holds it and the archive told it (as it was last archived). */
  source?: 'archive';
}

const iso = (ms: string | undefined) => new Date(Number(ms)).toISOString();

/**
 * An expectation as the API shows it, from its fields as kept (its Redis hash, or the copy of it the
 * archive holds); undefined for a missing or damaged one.
 */
export function expectationOf(h: Readonly<Record<string, string | undefined>>): Expectation | undefined {
  if (!h.id || !h.eventType || !h.environment || !h.requestId || !isExpectationState(h.state)) return undefined;
  const optional = (name: string, value: string | undefined) => (value ? { [name]: value } : {});
  return {
    id: h.id,
    eventType: h.eventType as EventType,
    environment: h.environment,
    requestId: h.requestId,
    dueBy: iso(h.dueBy),
    createdAt: iso(h.createdAt),
    createdBy: h.createdBy ?? '',
    state: h.state,
    updatedAt: iso(h.updatedAt),
    attempts: Number(h.attempt ?? 0),
    ...optional('metBy', h.metBy),
    ...optional('lastOutcome', h.lastOutcome),
    ...optional('inquiryEventId', h.inquiryEventId),
    ...optional('lateEventId', h.lateEventId),
    ...optional('cancelledBy', h.cancelledBy),
  };
}

const MAX_DUE_SECONDS = 90 * 86_400;

/** What the merchant's systems send to expect a notification: a due time, or seconds from now. */
export const expectationInputSchema = z
  .strictObject({
    eventType: z.enum(EVENT_TYPES as [EventType, ...EventType[]]),
    environment: z.string().min(1).max(40).optional(),
    requestId: z
      .string()
      .min(1)
      .max(200)
      .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces'),
    dueBy: z.iso.datetime({ offset: true }).optional(),
    dueInSeconds: z.number().int().min(0).max(MAX_DUE_SECONDS).optional(),
  })
  .refine((e) => (e.dueBy === undefined) !== (e.dueInSeconds === undefined), 'give dueBy or dueInSeconds, one of them');
