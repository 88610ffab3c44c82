import { z } from 'zod';
import { EVENT_TYPES } from '../events/table';

const eventSelector = z.union([z.literal('*'), z.enum(EVENT_TYPES as [string, ...string[]])]);

/** One of the merchant's own systems that receives forwarded events. */
export const targetSchema = z.object({
  /** Names the target in queues, metrics and logs. */
  name: z.string().regex(/^[a-z0-9_-]{1,40}$/, 'lower-case letters, digits, _ and -, at most 40'),
  url: z.url({ protocol: /^https?$/ }),
  /** Event types to receive, or `["*"]` for all. */
  events: z.array(eventSelector).min(1),
  /** A Standard Webhooks secret (`whsec_…`): forwarded requests then carry `webhook-signature`. */
  secret: z.string().regex(/^whsec_[A-Za-z0-9+/=]+$/, 'must be whsec_ followed by Base64').optional(),
  /** Static headers sent on every request, e.g. Authorization. */
  headers: z.record(z.string(), z.string()).default({}),
  /** @defaultValue 10000 */
  timeoutMs: z.number().int().positive().default(10000),
  /** Attempts before a delivery is dead-lettered. @defaultValue 12 */
  maxAttempts: z.number().int().min(1).max(100).default(12),
  /** Exponential backoff with jitter between attempts. @defaultValue 1 s to 1 h */
  backoff: z
    .object({ initialMs: z.number().int().positive(), maxMs: z.number().int().positive() })
    .default({ initialMs: 1000, maxMs: 3600000 }),
  /** Deliveries in flight at once, per worker process. @defaultValue 10 */
  concurrency: z.number().int().min(1).max(1000).default(10),
  /** At most `max` deliveries per `perMs`, across all worker processes. */
  rateLimit: z.object({ max: z.number().int().positive(), perMs: z.number().int().positive() }).optional(),
  /** `standard` (Standard Webhooks JSON) or `passthrough` (the platform's bytes and signature headers). @defaultValue standard */
  format: z.enum(['standard', 'passthrough']).default('standard'),
  /** 4xx statuses to retry like 5xx (408 and 429 always are); any other 4xx is permanent. @defaultValue [] */
  retryStatuses: z.array(z.number().int().min(400).max(499)).default([]),
});

export type Target = z.infer<typeof targetSchema>;

export function subscribes(target: Target, eventType: string): boolean {
  return target.events.includes('*') || target.events.includes(eventType);
}
