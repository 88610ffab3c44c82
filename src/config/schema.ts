import { z } from 'zod';
import { filterProblems } from '../model/filter';
import { targetSchema } from '../model/target-schema';
import { DEFAULT_ENVIRONMENT, environmentNames } from '../model/environments';
import { apiSchema, expectationsSchema } from './api-schema';
import { checkRedisSettings, redisSettingsShape } from './redis-schema';
import { parseSubnet } from '../model/subnets';

const ms = z.number().int().nonnegative();
const subnet = z
  .string()
  .refine(
    (s) => parseSubnet(s) !== undefined,
    'must be an IPv4 or IPv6 address or CIDR, like 203.0.113.0/24 or 2001:db8::/32',
  );
/** proxy-addr's names for ranges, as Express's `trust proxy` takes them. */
const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];
const TRUST_PROXY_HOP_COUNT =
  'a hop count is refused: it would believe X-Forwarded-For from any sender that reaches the receiver directly; give ' +
  "the proxies' addresses or CIDRs (or loopback, linklocal, uniquelocal)";

/**
 * One of the platform's environments (sandbox, production, European production): the keys that sign
 * its notifications, and what else a notification of it must satisfy.
 */
const environmentSchema = z.strictObject({
  /** The forms `platformPublicKeys` takes; several during a rotation. */
  publicKeys: z.array(z.string().min(1)).min(1),
  /** When set, a present `<prefix>-appid` header must equal it. @defaultValue platformAppId */
  appId: z.string().min(1).max(64).optional(),
  /** The merchant id signed into the legacy v1.2 string. @defaultValue merchantId */
  merchantId: z.string().min(1).optional(),
  /** When set, a notification this environment's key verified must come from these addresses. */
  sourceCidrs: z.array(subnet).min(1).optional(),
  /**
   * A query in the target-filter syntax over the body plus `merchantId` that every notification of
   * this environment must match; one that does not is acknowledged and quarantined (`not_accepted`).
   */
  accept: z
    .record(z.string(), z.unknown(), {
      error: 'must be a mapping of fields to conditions, e.g. { "data.merchant_no": { $in: [M100023] } }',
    })
    .optional(),
  /** The platform's API for this environment: inquiries about expected notifications that are overdue. */
  api: apiSchema.optional(),
});

/**
 * One admin-port principal: a basic-auth user (`password`) or a bearer token (`token`), authenticated
 * as `basic:<name>` or `token:<name>`.
 */
const adminPrincipalSchema = z
  .strictObject({
    name: z.string().regex(/^[A-Za-z0-9._@-]{1,64}$/, 'letters, digits, . _ @ and -, at most 64'),
    role: z.enum(['viewer', 'operator']),
    password: z.string().min(12, 'must be at least 12 characters').optional(),
    token: z.string().min(16, 'must be at least 16 characters').optional(),
  })
  .refine(
    (p) => (p.password === undefined) !== (p.token === undefined),
    'give a password (basic auth) or a token (bearer), one of them',
  );

/** Every setting of the service; defaults live in config/default.yaml. */
export const configSchema = z
  .strictObject({
    port: z.number().int().min(0).max(65535),
    host: z.string().min(1),
    ...redisSettingsShape,
    /** Which parts run in this process: the public receiver, the delivery workers, or both. */
    role: z.enum(['all', 'receiver', 'worker']),
    /** Key texts: Base64 DER (X.509 SPKI), PEM public keys or PEM certificates, or `file:` paths. */
    platformPublicKeys: z.array(z.string().min(1)),
    platformAppId: z.string().min(1).max(64).optional(),
    merchantId: z.string().min(1).optional(),
    /**
     * The platform's environments by name, each with its own keys. Absent: one environment named
     * `production` made of the flat settings (platformPublicKeys, platformAppId, merchantId).
     */
    environments: z
      .record(
        z.string().regex(/^[a-z0-9_-]{1,40}$/, 'lower-case letters, digits, _ and -, at most 40'),
        environmentSchema,
      )
      .optional(),
    signatureHeaderPrefix: z
      .string()
      .regex(/^[A-Za-z0-9-]+$/, 'letters, digits and dashes only')
      .transform((s) => s.toLowerCase()),
    signatureSchemes: z.array(z.enum(['current', 'legacy'])).min(1),
    timestampToleranceMs: ms.min(1000),
    callbackBasePath: z
      .string()
      .regex(/^(\/[A-Za-z0-9._~-]+)*$/, 'empty, or a path like /hooks/platform without a trailing slash'),
    queuePrefix: z.string().regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, _ and - only'),
    enqueueTimeoutMs: ms.min(1),
    dedupWindowMs: ms,
    bodyLimitBytes: z.number().int().positive(),
    /** Concurrent connections on the public port; more are closed on arrival. */
    maxConnections: z.number().int().positive(),
    /**
     * Concurrent public-port connections from one source address (an IPv6 /64); more are closed on
     * arrival. Applies when no proxy is trusted (behind one, the proxy's own per-client limit does this).
     */
    maxConnectionsPerSource: z.number().int().positive(),
    /**
     * Bytes held at once, across the process, for request bodies not yet verified; a request that
     * would pass it is answered 503 with Retry-After. Bounds memory whatever the number of senders.
     */
    unverifiedBodyBudgetBytes: z.number().int().positive(),
    /** When not empty, notify requests from other addresses are refused 403. */
    platformSourceCidrs: z.array(subnet),
    /**
     * Express's `trust proxy`, for the source allowlist behind a load balancer: the proxies'
     * addresses/CIDRs (or loopback, linklocal, uniquelocal). A hop count is refused: it believes
     * X-Forwarded-For from whoever connects, so a sender reaching the receiver directly could choose
     * its address. `true` (trust any sender's X-Forwarded-For) is refused for the same reason.
     */
    trustProxy: z
      .array(
        z
          .string()
          .refine(
            (s) => PROXY_RANGE_NAMES.includes(s) || parseSubnet(s) !== undefined,
            `must be an address, a CIDR, or one of ${PROXY_RANGE_NAMES.join(', ')}`,
          ),
        {
          error: (issue) =>
            typeof issue.input === 'number'
              ? TRUST_PROXY_HOP_COUNT
              : `must be the proxies' addresses or CIDRs (or ${PROXY_RANGE_NAMES.join(', ')})`,
        },
      )
      .optional(),
    logLevel: z.enum(['error', 'warn', 'info', 'http', 'verbose', 'debug', 'silly']),
    /** A recurring error (Redis down, a target down) is logged once per this interval, with a count. */
    logRepeatIntervalMs: ms.min(100),
    sensitiveFields: z.array(z.string().min(1)),
    /** Completed jobs are removed after this age or count; failed ones are kept for an operator. */
    retention: z.strictObject({
      completed: z.strictObject({ ageSeconds: z.number().int().positive(), count: z.number().int().positive() }),
    }),
    http: z.strictObject({
      requestTimeoutMs: ms.min(1),
      headersTimeoutMs: ms.min(1),
      keepAliveTimeoutMs: ms.min(1),
    }),
    shutdownTimeoutMs: ms.min(1),
    targets: z.array(targetSchema),
    expectations: expectationsSchema,
    worker: z.strictObject({
      /** How long a worker holds a job before another may take it over (a crashed worker's jobs return after this). */
      lockDurationMs: ms.min(1000),
      stalledIntervalMs: ms.min(500),
      /** How long in-flight deliveries may finish on SIGTERM before they are left to be picked up again. */
      shutdownTimeoutMs: ms.min(1),
    }),
    adminPort: z.number().int().min(0).max(65535),
    adminHost: z.string().min(1),
    adminToken: z.string().min(16, 'must be at least 16 characters').optional(),
    adminUser: z.string().min(1).optional(),
    adminPassword: z.string().min(12, 'must be at least 12 characters').optional(),
    /**
     * Further admin-port principals, each with a role: a `viewer` reads (console, API, dashboard,
     * metrics), an `operator` also acts. ADMIN_TOKEN and ADMIN_USER/ADMIN_PASSWORD are operators.
     */
    adminPrincipals: z.array(adminPrincipalSchema),
    adminReadOnlyDashboard: z.boolean(),
    /**
     * Whether an operator may replay a quarantined notification with a corrected body (forwarded marked `corrected`).
     */
    adminAllowCorrections: z.boolean(),
    /**
     * The evidence archive in PostgreSQL (docs/archive.md): off until `url` (ARCHIVE_URL) names one.
     */
    archive: z.strictObject({
      /** A `postgres://` or `postgresql://` connection string (credentials masked wherever it is shown). */
      url: z
        .string()
        .regex(/^postgres(ql)?:\/\/./, 'a connection string like postgresql://user:password@host:5432/database')
        .optional(),
      /** Rows older than this many days are removed, a whole month at a time. @defaultValue 2557 (about seven years) */
      retainDays: z.number().int().min(1),
      /** Notifications written per transaction. @defaultValue 500 */
      batchSize: z.number().int().min(1).max(2000),
      /** How long an entry another archiver took may stay unwritten before this one takes it. @defaultValue 30000 */
      claimIdleMs: ms.min(100),
    }),
    /** The admin port's server timeouts, apart from the public port's. */
    admin: z.strictObject({
      /** Whole request, headers and body. @defaultValue 30000 */
      requestTimeoutMs: ms.min(1),
      /** Request line and headers. @defaultValue 10000 */
      headersTimeoutMs: ms.min(1),
      /** Idle time between requests on a kept-alive connection. @defaultValue 5000 */
      keepAliveTimeoutMs: ms.min(1),
    }),
  })
  .superRefine((c, ctx) => {
    checkRedisSettings(c, ctx);
    if (c.role !== 'worker' && c.platformPublicKeys.length === 0 && c.environments === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['platformPublicKeys'],
        message: 'at least one platform public key is required (PLATFORM_PUBLIC_KEYS)',
      });
    }
    checkEnvironments(c, ctx);
    const names = c.targets.map((t) => t.name);
    names.forEach((name, i) => {
      if (names.indexOf(name) !== i)
        ctx.addIssue({ code: 'custom', path: ['targets', i, 'name'], message: `target name "${name}" is used twice` });
    });
    if ((c.adminUser === undefined) !== (c.adminPassword === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['adminPassword'], message: 'ADMIN_USER and ADMIN_PASSWORD go together' });
    }
    // A name is a principal (`basic:<name>`, `token:<name>`) in the audit log, so it must say who acted.
    const principalNames = [
      ...(c.adminUser ? [`basic:${c.adminUser}`] : []),
      ...c.adminPrincipals.map((p) => `${p.password !== undefined ? 'basic' : 'token'}:${p.name}`),
    ];
    c.adminPrincipals.forEach((p, i) => {
      if (principalNames.indexOf(principalNames[i + (c.adminUser ? 1 : 0)]!) !== i + (c.adminUser ? 1 : 0)) {
        ctx.addIssue({
          code: 'custom',
          path: ['adminPrincipals', i, 'name'],
          message: `principal "${p.name}" is named twice (ADMIN_USER counts)`,
        });
      }
    });
    if (c.signatureSchemes.includes('legacy') && !c.merchantId) {
      for (const [name, env] of Object.entries(c.environments ?? { [DEFAULT_ENVIRONMENT]: {} })) {
        if (!env.merchantId)
          ctx.addIssue({
            code: 'custom',
            path: c.environments ? ['environments', name, 'merchantId'] : ['merchantId'],
            message: 'MERCHANT_ID is required when the legacy scheme is enabled',
          });
      }
    }
    if (c.unverifiedBodyBudgetBytes < c.bodyLimitBytes) {
      ctx.addIssue({
        code: 'custom',
        path: ['unverifiedBodyBudgetBytes'],
        message: 'must be at least bodyLimitBytes, or a body at the limit could never be received',
      });
    }
    // Node refuses to start a server whose header timeout outlasts its request timeout.
    if (c.http.headersTimeoutMs > c.http.requestTimeoutMs) {
      ctx.addIssue({
        code: 'custom',
        path: ['http', 'headersTimeoutMs'],
        message: 'must not exceed http.requestTimeoutMs',
      });
    }
    if (c.admin.headersTimeoutMs > c.admin.requestTimeoutMs) {
      ctx.addIssue({
        code: 'custom',
        path: ['admin', 'headersTimeoutMs'],
        message: 'must not exceed admin.requestTimeoutMs',
      });
    }
    if (c.expectations.retryMaxMs < c.expectations.retryInitialMs) {
      ctx.addIssue({
        code: 'custom',
        path: ['expectations', 'retryMaxMs'],
        message: 'must be at least expectations.retryInitialMs',
      });
    }
    // A replay is recognised by the de-duplication key, so it must outlive the timestamp window twice over.
    if (c.dedupWindowMs < 2 * c.timestampToleranceMs) {
      ctx.addIssue({ code: 'custom', path: ['dedupWindowMs'], message: 'must be at least twice timestampToleranceMs' });
    }
  });

export type Config = z.infer<typeof configSchema>;

type ConfigInput = Pick<Config, 'environments' | 'platformPublicKeys' | 'targets'>;

/**
 * `environments` and the flat key settings are two ways to say the same thing: one or the other.
 * Every `accept` rule is checked like a target filter; every environment a target names exists; and
 * with several environments, a target that names none takes `production`, which must then exist.
 */
function checkEnvironments(c: ConfigInput, ctx: z.RefinementCtx): void {
  if (c.environments !== undefined) {
    if (Object.keys(c.environments).length === 0)
      ctx.addIssue({
        code: 'custom',
        path: ['environments'],
        message: 'name at least one environment, or leave environments out',
      });
    if (c.platformPublicKeys.length > 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['platformPublicKeys'],
        message:
          'is the shorthand for one environment named production; with environments configured, list each ' +
          "environment's keys there",
      });
    }
    for (const [name, env] of Object.entries(c.environments)) {
      for (const problem of env.accept ? filterProblems(env.accept) : []) {
        ctx.addIssue({
          code: 'custom',
          path: ['environments', name, 'accept'],
          message: `environment "${name}": ${problem}`,
        });
      }
    }
  }
  const names = environmentNames(c);
  c.targets.forEach((t, i) => {
    for (const env of t.environments ?? []) {
      if (!names.includes(env))
        ctx.addIssue({
          code: 'custom',
          path: ['targets', i, 'environments'],
          message: `target "${t.name}": no environment named "${env}" (configured: ${names.join(', ')})`,
        });
    }
    if (t.environments === undefined && names.length > 1 && !names.includes(DEFAULT_ENVIRONMENT)) {
      ctx.addIssue({
        code: 'custom',
        path: ['targets', i, 'environments'],
        message:
          `target "${t.name}": with several environments and none named ${DEFAULT_ENVIRONMENT}, say which it ` +
          `takes, e.g. environments: [${names[0]}]`,
      });
    }
  });
}
