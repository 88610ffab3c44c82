import { z } from 'zod';
import { EVENT_TYPES, type EventType } from '../model/event-table';

const eventTypeKey = z.enum(EVENT_TYPES as [EventType, ...EventType[]]);

/**
 * How to ask the platform about one event type: `request(expectation)` builds the inquiry's body
 * (default `{ request_id }`), `settled(response)` says whether the answer reports a final state. Each
 * is JavaScript source, inline or `file:<path>`, run in the transform sandbox.
 */
const inquiryFunctionsSchema = z.strictObject({
  request: z.string().min(1).optional(),
  settled: z.string().min(1),
  /** Time limit of each call. @defaultValue 50 */
  timeoutMs: z.number().int().min(1).max(1000).optional(),
});

/**
 * The platform's API as this merchant calls it in one environment: where, with which key, and how to
 * ask about each event type. The app id (`x-svc-appid`) and merchant id (`X-Merch-Id`) are the
 * environment's `appId` and `merchantId`.
 */
export const apiSchema = z.strictObject({
  baseUrl: z.url({ protocol: /^https?$/ }),
  /** The merchant's private key, PKCS#8: `file:<path>` or `env:<VARIABLE>`, never inline. */
  privateKey: z.string().regex(/^(file|env):.+$/, 'file:<path> or env:<VARIABLE> (never the key itself)'),
  /** Deliver an event built from a final, verified answer to the type's targets. @defaultValue false */
  deliverFromInquiry: z.boolean().default(false),
  /** One inquiry's time limit. @defaultValue 10000 */
  timeoutMs: z.number().int().min(100).default(10000),
  inquiry: z.partialRecord(eventTypeKey, inquiryFunctionsSchema).default({}),
});

export type InquiryFunctions = z.infer<typeof inquiryFunctionsSchema>;

/** Expectations of notifications, and the inquiries that chase overdue ones. */
export const expectationsSchema = z.strictObject({
  /** Expectations open (or overdue) at once; a new one past it is refused 429. */
  maxOpenExpectations: z.number().int().positive(),
  /** How often due expectations are looked for. */
  pollIntervalMs: z.number().int().min(10),
  /** How long a claimed inquiry is held before another process may take the next attempt. */
  claimLeaseMs: z.number().int().min(100),
  /** Backoff between inquiries about the same expectation: doubled from `retryInitialMs` up to `retryMaxMs`. */
  retryInitialMs: z.number().int().min(10),
  retryMaxMs: z.number().int().min(10),
  /** How long after its due time an expectation is asked about before it is `unresolved`. */
  horizonSeconds: z.number().int().positive(),
  /** How long a settled expectation is kept for the listing. */
  retentionSeconds: z.number().int().positive(),
  /** Where the platform puts the request_id in a type's body, when not at `data.request_id`. */
  requestIdPaths: z.partialRecord(eventTypeKey, z.string().regex(/^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$/)).default({}),
});

export type ExpectationSettings = z.infer<typeof expectationsSchema>;
