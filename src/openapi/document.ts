import path from 'node:path';
import { packageInfo, projectRoot } from '../config/project-root';
import {
  notifyPaths,
  notifyResponses,
  responseName,
  signatureParameters,
  type NotifyDocumentOptions,
} from './notify-operations';
import { forwardedWebhooks, WEBHOOK_PARAMETERS } from './webhooks';

/** The committed copy, for the default configuration; `npm run openapi` writes it. */
export const COMMITTED_DOCUMENT = path.join(projectRoot(), 'docs', 'openapi.json');

export function serialiseDocument(doc: unknown): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}

export const DEFAULT_DOCUMENT_OPTIONS: NotifyDocumentOptions = { headerPrefix: 'x-svc', basePath: '' };

/**
 * The OpenAPI 3.1 description of what the service accepts (`paths`, the notify operations) and what
 * it sends (`webhooks`, the forwarded events), generated from the event table, the result codes and
 * the zod schemas, never written by hand.
 */
export function buildOpenApiDocument(opts: NotifyDocumentOptions = DEFAULT_DOCUMENT_OPTIONS): Record<string, unknown> {
  const pkg = packageInfo();
  const signature = signatureParameters(opts.headerPrefix);
  return {
    openapi: '3.1.0',
    info: { title: pkg.name, version: pkg.version, description: pkg.description, license: { name: pkg.license } },
    servers: [
      {
        url: 'https://{callbackHost}',
        description: 'The host of the callback URL registered with the platform (the public port, behind TLS).',
        variables: { callbackHost: { default: 'callbacks.merchant.test', description: 'Your callback host name.' } },
      },
    ],
    tags: [
      { name: 'notifications', description: 'What the platform POSTs to the public port.' },
      {
        name: 'forwarded events',
        description: "What the service POSTs to the merchant's systems (Standard Webhooks).",
      },
    ],
    paths: notifyPaths(opts, Object.keys(signature)),
    webhooks: forwardedWebhooks(),
    components: {
      schemas: {
        Envelope: {
          type: 'object',
          required: ['ret_code', 'ret_msg'],
          properties: { ret_code: { type: 'string', pattern: '^\\d{6}$' }, ret_msg: { type: 'string' } },
        },
      },
      responses: Object.fromEntries(
        Object.entries(notifyResponses()).map(([status, response]) => [responseName(status), response]),
      ),
      parameters: { ...signature, ...WEBHOOK_PARAMETERS },
      securitySchemes: {
        platformSignature: {
          type: 'apiKey',
          in: 'header',
          name: `${opts.headerPrefix}-sign`,
          description:
            `SHA256withRSA (PKCS#1 v1.5) by a configured platform key over \`POST\\n<request ` +
            `target>\\n<${opts.headerPrefix}-timestamp>\\n<${opts.headerPrefix}-nonce>\\n<raw body>\\n\`, Base64 ` +
            `(URL-encoded once allowed).`,
        },
        legacySignature: {
          type: 'apiKey',
          in: 'header',
          name: 'signature',
          description:
            'The legacy v1.2 scheme (with `type: RSA256`, `version: v1.2`), when enabled: SHA256withRSA over ' +
            '`merchantId=<id>&timestamp=<body.timestamp>&requestBody=<raw body>`.',
        },
        webhookSignature: {
          type: 'apiKey',
          in: 'header',
          name: 'webhook-signature',
          description:
            'Standard Webhooks: `v1,<Base64 HMAC-SHA256>` of `<webhook-id>.<webhook-timestamp>.<body>` with the ' +
            "target's secret, one per secret.",
        },
      },
    },
  };
}
