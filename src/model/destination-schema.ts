import { z } from 'zod';

/**
 * PEM files for a destination's TLS, as for Redis (`REDIS_TLS_CA_FILE` …): a private CA to trust, and
 * a client certificate and key for mutual TLS. TLS itself is turned on by the URL's scheme (`amqps://`,
 * `tls://`, `rediss://`) or by any of these files.
 */
const tlsFiles = z
  .strictObject({
    caFile: z.string().min(1).optional(),
    certFile: z.string().min(1).optional(),
    keyFile: z.string().min(1).optional(),
  })
  .refine((t) => (t.certFile === undefined) === (t.keyFile === undefined), {
    message: 'certFile and keyFile go together',
    path: ['keyFile'],
  });

export type DestinationTls = z.infer<typeof tlsFiles>;

/** `{type}` is the only placeholder: the event type (`payment.result`). */
const TEMPLATE_PLACEHOLDER = /\{([^}]*)\}/g;
function onlyTypePlaceholder(value: string, ctx: z.RefinementCtx): void {
  for (const [, name] of value.matchAll(TEMPLATE_PLACEHOLDER)) {
    if (name !== 'type')
      ctx.addIssue({
        code: 'custom',
        message: `unknown placeholder {${name}}: the only one is {type}, the event type`,
      });
  }
}

/**
 * RabbitMQ (AMQP 0-9-1): a persistent, `mandatory` publish to `exchange` with `routingKey`, confirmed
 * by the broker (publisher confirms); a message no queue takes is returned, which is a failure.
 */
const amqpDestination = z.strictObject({
  type: z.literal('amqp'),
  /** `amqp://user:pass@host:5672/vhost`, or `amqps://` for TLS. */
  url: z.string().regex(/^amqps?:\/\/[^/\s]/, 'must be amqp://… or amqps://…'),
  /** The exchange to publish to; it must exist. `""` is the default exchange (routing key = queue name). */
  exchange: z.string().max(255),
  /** @defaultValue `{type}` */
  routingKey: z.string().max(255).superRefine(onlyTypePlaceholder).default('{type}'),
  tls: tlsFiles.optional(),
});

/** A NATS subject: dot-separated tokens without spaces or wildcards; `{type}` may stand for tokens. */
const natsSubject = z
  .string()
  .regex(/^[^\s.*>]+(\.[^\s.*>]+)*$/, 'a subject is dot-separated tokens, without spaces or the wildcards * and >')
  .superRefine(onlyTypePlaceholder);

/**
 * NATS JetStream: a publish acknowledged by the stream that captures the subject; `Nats-Msg-Id` (the
 * event id) lets JetStream drop a republished duplicate within the stream's duplicate window.
 */
const natsDestination = z.strictObject({
  type: z.literal('nats'),
  /** `nats://host:4222`, `tls://host:4222` for TLS; credentials as `nats://user:pass@…` or `nats://token@…`. */
  servers: z.array(z.string().regex(/^(nats|tls):\/\/[^/\s]/, 'must be nats://host:port or tls://host:port')).min(1),
  subject: natsSubject,
  tls: tlsFiles.optional(),
});

/** A Redis stream: `XADD`, acknowledged by that Redis (and by `minReplicasAck` replicas through WAIT). */
const redisStreamDestination = z.strictObject({
  type: z.literal('redis-stream'),
  /** `redis://user:pass@host:6379/0`, or `rediss://` for TLS. */
  url: z.string().regex(/^rediss?:\/\/[^/\s]/, 'must be redis://… or rediss://…'),
  stream: z.string().min(1).max(512).superRefine(onlyTypePlaceholder),
  /** Trims the stream to about this many entries (`MAXLEN ~`). @defaultValue not trimmed */
  maxLen: z.number().int().positive().optional(),
  /** Replicas that must confirm each entry (WAIT) before it counts as delivered. @defaultValue 0 */
  minReplicasAck: z.number().int().min(0).max(16).default(0),
  tls: tlsFiles.optional(),
});

/** A table name, optionally schema-qualified: lower-case, so that it means the same quoted or not. */
const tableName = z
  .string()
  .regex(
    /^[a-z_][a-z0-9_]{0,62}(\.[a-z_][a-z0-9_]{0,62})?$/,
    'a lower-case table name, optionally with its schema: inbox, ledger.webhook_inbox',
  );

/**
 * A PostgreSQL table: one `INSERT … ON CONFLICT (webhook_id) DO NOTHING` per delivery, so each event is
 * one row however often it is delivered. TLS and its files by the URL (`?sslmode=verify-full&sslrootcert=…`).
 */
const postgresDestination = z.strictObject({
  type: z.literal('postgres'),
  /** `postgres://user:pass@host:5432/db` (or `postgresql://`). */
  url: z.string().regex(/^postgres(ql)?:\/\/[^/\s]/, 'must be postgres://… or postgresql://…'),
  table: tableName,
  /** Creates the table (and nothing else) at start-up when it is missing. @defaultValue false */
  createTable: z.boolean().default(false),
});

/** A merchant's message broker or database, in place of a target's `url`. */
export const destinationSchema = z.discriminatedUnion(
  'type',
  [amqpDestination, natsDestination, redisStreamDestination, postgresDestination],
  {
    error: (issue) =>
      issue.code === 'invalid_union'
        ? `unknown destination type ${JSON.stringify((issue.input as { type?: unknown } | undefined)?.type)}: amqp, ` +
          `nats, redis-stream or postgres`
        : undefined,
  },
);

export type Destination = z.infer<typeof destinationSchema>;
export type AmqpDestination = z.infer<typeof amqpDestination>;
export type NatsDestination = z.infer<typeof natsDestination>;
export type RedisStreamDestination = z.infer<typeof redisStreamDestination>;
export type PostgresDestination = z.infer<typeof postgresDestination>;

/** A routing key, subject or stream name for one event: `{type}` replaced by its type. */
export function fillTemplate(template: string, eventType: string): string {
  return template.includes('{') ? template.replaceAll('{type}', eventType) : template;
}

/** The destination's URLs: each names a host, and may carry credentials. */
export function destinationUrls(d: Destination): string[] {
  return d.type === 'nats' ? d.servers : [d.url];
}

/** Whether a destination's traffic is encrypted: its scheme, TLS files, or a PostgreSQL URL's `sslmode`. */
export function destinationUsesTls(d: Destination): boolean {
  if (d.type === 'postgres') return /[?&](sslmode=(require|verify-ca|verify-full)|ssl=(true|1))(&|$)/.test(d.url);
  return d.tls !== undefined || destinationUrls(d).some((u) => /^(amqps|tls|rediss):/.test(u));
}
