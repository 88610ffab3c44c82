import { z } from 'zod';
import { nearest } from './nearest';
import { EVENT_TYPES } from './event-table';
import { filterProblems } from './filter';
import { isLoopbackUrl, secretKeyBytes } from './target-url';
import { destinationSchema } from './destination-schema';

/** HMAC-SHA256 keys shorter than this can be guessed offline from one signed request. */
export const MIN_SECRET_BYTES = 24;

/** An event type, or `*`; a typo is answered with the nearest type and the whole list. */
const eventSelector = z.enum(['*', ...EVENT_TYPES], {
  error: (issue) => {
    const suggestion = typeof issue.input === 'string' ? nearest(issue.input, EVENT_TYPES) : undefined;
    const didYouMean = suggestion ? `; did you mean ${suggestion}?` : '';
    const valid = `Valid: ${EVENT_TYPES.join(', ')}, or "*" for all`;
    return `unknown event type ${JSON.stringify(issue.input)}${didYouMean} ${valid}`;
  },
});

const webhookSecret = z.string().regex(/^whsec_[A-Za-z0-9+/=]+$/, 'must be whsec_ followed by Base64');

/** HTTP field names are tokens (RFC 9110 5.1); named in the problem's path, which a key schema would not do. */
function headerNames(headers: Record<string, string>, ctx: z.RefinementCtx): void {
  for (const name of Object.keys(headers)) {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name))
      ctx.addIssue({
        code: 'custom',
        path: [name],
        message: "a header name is letters, digits and !#$%&'*+.^_`|~- only",
      });
  }
}
/**
 * A field value without control characters (RFC 9110 5.5; tab allowed): CR/LF would split the request
 * and NUL is refused by the HTTP client, so every delivery would fail and be dead-lettered.
 */
const headerValue = z
  .string()
  .regex(/^[\t\x20-\x7e\xa0-\uffff]*$/, 'a header value may not hold CR, LF, NUL or other control characters');

const targetFields = z.strictObject({
  /** Names the target in queues, metrics and logs. */
  name: z.string().regex(/^[a-z0-9_-]{1,40}$/, 'lower-case letters, digits, _ and -, at most 40'),
  /** Where an HTTP target's deliveries are POSTed; a broker target names a `destination` instead. */
  url: z.url({ protocol: /^https?$/ }).optional(),
  /** A message broker (RabbitMQ, NATS JetStream, a Redis stream) or a PostgreSQL table in place of `url`. */
  destination: destinationSchema.optional(),
  /** Event types to receive, or `["*"]` for all. */
  events: z.array(eventSelector).min(1),
  /**
   * The platform environments whose events it takes (see `environments`). @defaultValue the only
   * environment; with several, `production` alone
   */
  environments: z
    .array(z.string().regex(/^[a-z0-9_-]{1,40}$/, 'an environment name'))
    .min(1)
    .optional(),
  /**
   * A Standard Webhooks secret (`whsec_…`), or several during a rotation (`[whsec_new, whsec_old]`):
   * forwarded requests then carry one `v1,` signature per secret in `webhook-signature`, so the
   * merchant's system verifies with either while it switches. Read it through `secretsOf`.
   */
  secret: z.union([webhookSecret, z.array(webhookSecret).min(1).max(10)]).optional(),
  /** Static headers sent on every request, e.g. Authorization. */
  headers: z.record(z.string(), headerValue).superRefine(headerNames).default({}),
  /** @defaultValue 10000 */
  timeoutMs: z.number().int().positive().default(10000),
  /** Attempts before a delivery is dead-lettered. @defaultValue 12 */
  maxAttempts: z.number().int().min(1).max(100).default(12),
  /** Exponential backoff with jitter between attempts. @defaultValue 1 s to 1 h */
  backoff: z
    .strictObject({ initialMs: z.number().int().positive(), maxMs: z.number().int().positive() })
    .default({ initialMs: 1000, maxMs: 3600000 }),
  /** Deliveries in flight at once, per worker process. @defaultValue 10 */
  concurrency: z.number().int().min(1).max(1000).default(10),
  /** At most `max` deliveries per `perMs`, across all worker processes. */
  rateLimit: z.strictObject({ max: z.number().int().positive(), perMs: z.number().int().positive() }).optional(),
  /**
   * `standard` (Standard Webhooks JSON) or `passthrough` (the platform's bytes and signature headers). @defaultValue
   * standard
   */
  format: z.enum(['standard', 'passthrough']).default('standard'),
  /** 4xx statuses to retry like 5xx (408 and 429 always are); any other 4xx is permanent. @defaultValue [] */
  retryStatuses: z.array(z.number().int().min(400).max(499)).default([]),
  /** Allows an `http://` URL to a host other than this machine. @defaultValue false */
  allowInsecure: z.boolean().default(false),
  /**
   * Delivers only the events this MongoDB-syntax query (sift) matches, over the platform's body with
   * `merchantId` (the `X-Merch-Id` header) at the top level, e.g.
   * `{ "data.currency": { $in: [USD, EUR] }, merchantId: SUB-42 }`. @defaultValue every event of its types
   */
  filter: z
    .record(z.string(), z.unknown(), {
      error: 'must be a mapping of fields to conditions, e.g. { "data.currency": { $in: [USD, EUR] } }',
    })
    .optional(),
  /**
   * Ordered delivery: deliveries whose `key` values are equal go one at a time, in receipt order.
   * `key` is a dotted path into the platform's body (`data.request_id`) or `merchantId` (the
   * `X-Merch-Id` header); an event without it is delivered unordered. `onDeadLetter`: `block` (later
   * deliveries of the key wait until the dead letter is replayed, discarded or released) or `skip`.
   */
  /**
   * Reshapes each event before it is sent: JavaScript source defining `function transform(event)`,
   * inline or `file:<path>`. It runs in a sandbox and returns the body to send, or null to send nothing.
   */
  transform: z.string().min(1).optional(),
  /** The transform's time limit per event, milliseconds. @defaultValue 50 */
  transformTimeoutMs: z.number().int().min(1).max(1000).optional(),
  /**
   * The most the transform's result may take, bytes of JSON; more fails the delivery (`transform_error`).
   * @defaultValue 1048576 (1 MiB)
   */
  transformMaxBytes: z
    .number()
    .int()
    .min(2)
    .max(8 * 1024 * 1024)
    .optional(),
  order: z
    .strictObject({
      key: z
        .string()
        .regex(
          /^[A-Za-z0-9_$-]+(\.[A-Za-z0-9_$-]+)*$/,
          'a dotted path into the body, e.g. data.request_id, or merchantId',
        ),
      onDeadLetter: z.enum(['block', 'skip']).default('block'),
    })
    .optional(),
});

/**
 * One of the merchant's own systems that receives forwarded events. Plain HTTP only to this machine
 * (unless the target says `allowInsecure`), and every secret at least {@link MIN_SECRET_BYTES} bytes.
 */
export const targetSchema = targetFields.superRefine((t, ctx) => {
  if ((t.url === undefined) === (t.destination === undefined)) {
    ctx.addIssue({
      code: 'custom',
      path: t.url === undefined ? [] : ['destination'],
      message:
        `target "${t.name}": give exactly one of url (an HTTP endpoint) and destination (a message broker or ` +
        `database: { type: amqp | nats | redis-stream | postgres, … })`,
    });
  }
  const url = t.url === undefined ? undefined : new URL(t.url);
  if (url?.protocol === 'http:' && !t.allowInsecure && !isLoopbackUrl(url)) {
    ctx.addIssue({
      code: 'custom',
      path: ['url'],
      message:
        `target "${t.name}": http:// is allowed only to this machine (localhost, 127.0.0.0/8, ::1); use ` +
        `https://, or set allowInsecure: true`,
    });
  }
  for (const secret of ([] as string[]).concat(t.secret ?? [])) {
    const bytes = secretKeyBytes(secret);
    if (bytes < MIN_SECRET_BYTES) {
      ctx.addIssue({
        code: 'custom',
        path: ['secret'],
        message:
          `target "${t.name}": a secret carries ${bytes} bytes; at least ${MIN_SECRET_BYTES} (whsec_ and the ` +
          `Base64 of ${MIN_SECRET_BYTES} or more random bytes)`,
      });
    }
  }
  if (t.transform !== undefined && t.format === 'passthrough') {
    ctx.addIssue({
      code: 'custom',
      path: ['transform'],
      message:
        `target "${t.name}": a transform replaces the body, so it takes format: standard (passthrough sends ` +
        `the platform's bytes unchanged)`,
    });
  }
  if (t.destination?.type === 'postgres' && t.format === 'passthrough') {
    ctx.addIssue({
      code: 'custom',
      path: ['format'],
      message:
        `target "${t.name}": a postgres destination stores the standard body as jsonb (passthrough keeps the ` +
        `platform's bytes for its signature, which a row does not carry)`,
    });
  }
  for (const problem of t.filter ? filterProblems(t.filter) : []) {
    ctx.addIssue({ code: 'custom', path: ['filter'], message: `target "${t.name}": ${problem}` });
  }
});

export type Target = z.infer<typeof targetSchema> & {
  /**
   * The transform's text as the configuration loader read it (a `file:` transform's file), with the
   * name its errors give it; in the target's JSON, so a reload sees an edited file as a changed target.
   */
  transformSource?: { text: string; file: string };
};

export function subscribes(target: Target, eventType: string): boolean {
  return target.events.some((e) => e === '*' || e === eventType);
}

/** The target's secrets as a list (empty when it signs nothing). */
export function secretsOf(target: Pick<Target, 'secret'>): string[] {
  if (target.secret === undefined) return [];
  return typeof target.secret === 'string' ? [target.secret] : [...new Set(target.secret)];
}
