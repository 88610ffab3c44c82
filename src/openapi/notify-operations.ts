import { EVENT_TABLE, type EventDefinition } from '../model/event-table';
import { RET_CODES, SUCCESS } from '../http/envelope';
import { jsonSchemaOf, type JsonSchema } from './json-schema';

/**
 * What each result code means. Keyed by RET_CODES, so a code added there without a description here
 * does not compile, and every code appears in the document under its HTTP status.
 */
const MEANING: Record<keyof typeof RET_CODES, string> = {
  header: 'a signature header is missing, or breaks its bounds or fixed value',
  timestamp: 'the signed timestamp is outside the allowed window',
  signature: 'the signature is missing or does not verify',
  forbidden: 'the request came from an address outside the configured platform source addresses',
  notFound: 'no notify path here (answered for any other path)',
  methodNotAllowed: 'a method other than POST on a notify path (with `Allow: POST`)',
  requestTimeout: 'the headers or the whole request did not arrive within the server timeouts',
  payloadTooLarge: 'the body is over the configured limit',
  expectationFailed: 'an `Expect` header other than `100-continue`',
  headersTooLarge: 'the request headers are over 16 KiB',
  badRequest: 'the request could not be read, or an HTTP/1.1 request has no `Host`',
  unavailable:
    'not stored: Redis did not confirm the notification in time, or the budget for bodies not yet verified was in ' +
    'use; nothing was acknowledged; retry (`Retry-After: 5`)',
  internal: 'unexpected error; no stack trace is returned',
};

/** HTTP status of a result code: its first three digits (`401003` is a 401). */
function statusOf(code: string): string {
  return code.slice(0, 3);
}

/** Every answer of a notify path, by HTTP status, for `components.responses`. */
export function notifyResponses(): Record<string, unknown> {
  const byStatus = new Map<string, (keyof typeof RET_CODES)[]>();
  for (const key of Object.keys(RET_CODES) as (keyof typeof RET_CODES)[]) {
    const status = statusOf(RET_CODES[key]);
    byStatus.set(status, [...(byStatus.get(status) ?? []), key]);
  }
  const responses: Record<string, unknown> = {
    '200': {
      description:
        "Stored (or already stored: a replay or a duplicate: not queued again, and counted in the admin event view's " +
        '`copies` when it carries the same event), or verified but unusable and quarantined. Only a 200 means the ' +
        'platform may stop retrying.',
      content: { 'application/json': { schema: envelopeWith([SUCCESS.ret_code]), example: SUCCESS } },
    },
  };
  for (const [status, keys] of [...byStatus].sort(([a], [b]) => a.localeCompare(b))) {
    const codes = keys.map((k) => RET_CODES[k]);
    responses[status] = {
      description: keys.map((k) => `\`${RET_CODES[k]}\`: ${MEANING[k]}`).join('; '),
      ...(status === '405' ? { headers: { Allow: { schema: { type: 'string', const: 'POST' } } } } : {}),
      ...(status === '503' ? { headers: { 'Retry-After': { schema: { type: 'string' }, example: '5' } } } : {}),
      content: { 'application/json': { schema: envelopeWith(codes) } },
    };
  }
  return responses;
}

function envelopeWith(codes: string[]): JsonSchema {
  return { allOf: [{ $ref: '#/components/schemas/Envelope' }, { properties: { ret_code: { enum: codes } } }] };
}

export interface NotifyDocumentOptions {
  /** The current scheme's header prefix. @defaultValue `x-svc` */
  headerPrefix: string;
  /** `CALLBACK_BASE_PATH`. @defaultValue '' */
  basePath: string;
}

/** The signature headers of both schemes, as reusable parameters. */
export function signatureParameters(prefix: string): Record<string, unknown> {
  const header = (name: string, description: string, schema: JsonSchema) => ({
    name,
    in: 'header',
    required: false,
    description,
    schema,
  });
  return {
    timestamp: header(
      `${prefix}-timestamp`,
      'Current scheme (required there): milliseconds since the epoch, within the tolerance of now.',
      { type: 'string', pattern: '^\\d{1,13}$' },
    ),
    nonce: header(
      `${prefix}-nonce`,
      'Current scheme (required there): unique per request; a nonce seen before is a replay.',
      { type: 'string', minLength: 10, maxLength: 100 },
    ),
    sign: header(
      `${prefix}-sign`,
      'Current scheme (required there): URL-encoded Base64 SHA256withRSA over ' +
        '`POST\\n<target>\\n<timestamp>\\n<nonce>\\n<body>\\n`.',
      { type: 'string', maxLength: 500 },
    ),
    signAlg: header(`${prefix}-sign-alg`, 'Current scheme, optional.', { type: 'string', const: 'SHA256_WITH_RSA' }),
    appId: header(
      `${prefix}-appid`,
      'Current scheme, optional; when the receiver has an app id configured it must match.',
      { type: 'string', minLength: 1, maxLength: 64 },
    ),
    legacySignature: header(
      'signature',
      'Legacy v1.2 scheme (when enabled): Base64 SHA256withRSA over `merchantId=…&timestamp=…&requestBody=…`.',
      { type: 'string', maxLength: 500 },
    ),
    legacyType: header('type', 'Legacy v1.2 scheme.', { type: 'string', const: 'RSA256' }),
    legacyVersion: header('version', 'Legacy v1.2 scheme.', { type: 'string', const: 'v1.2' }),
    merchId: header(
      'X-Merch-Id',
      'Sub-merchant, for partner accounts. Not covered by the signature: routing information, not proof.',
      { type: 'string' },
    ),
  };
}

export function responseName(status: string): string {
  return `notify_${status}`;
}

function operationId(type: string): string {
  return `notify_${type.replace(/[^a-z0-9]+/g, '_')}`;
}

function notifyOperation(e: EventDefinition, parameterNames: string[]): Record<string, unknown> {
  return {
    operationId: operationId(e.type),
    summary: `Receive the platform's ${e.type} notification`,
    description:
      `Verified over the raw bytes, de-duplicated and durably queued as \`${e.type}\` before the 200 ` + `answer.`,
    tags: ['notifications'],
    // Either scheme's signature (the legacy one only when SIGNATURE_SCHEMES includes it).
    security: [{ platformSignature: [] }, { legacySignature: [] }],
    parameters: parameterNames.map((name) => ({ $ref: `#/components/parameters/${name}` })),
    requestBody: { required: true, content: { 'application/json': { schema: jsonSchemaOf(e.schema) } } },
    // One set of answers shared by the seven operations, in components.responses.
    responses: Object.fromEntries(
      Object.keys(notifyResponses()).map((status) => [
        status,
        { $ref: `#/components/responses/${responseName(status)}` },
      ]),
    ),
  };
}

/** `paths`: the seven notify operations, from the event table. */
export function notifyPaths(opts: NotifyDocumentOptions, parameterNames: string[]): Record<string, unknown> {
  return Object.fromEntries(
    EVENT_TABLE.map((e) => [`${opts.basePath}${e.path}`, { post: notifyOperation(e, parameterNames) }]),
  );
}
