import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../config/project-root';
import { notifyPaths, notifyResponses, responseName, signatureParameters, type NotifyDocumentOptions } from './notify-operations';
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
  const pkg = JSON.parse(readFileSync(path.join(projectRoot(), 'package.json'), 'utf8')) as { name: string; version: string; description: string };
  const signature = signatureParameters(opts.headerPrefix);
  return {
    openapi: '3.1.0',
    info: { title: pkg.name, version: pkg.version, description: pkg.description },
    tags: [
      { name: 'notifications', description: 'What the platform POSTs to the public port.' },
      { name: 'forwarded events', description: 'What the service POSTs to the merchant\'s systems (Standard Webhooks).' },
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
      responses: Object.fromEntries(Object.entries(notifyResponses()).map(([status, response]) => [responseName(status), response])),
      parameters: { ...signature, ...WEBHOOK_PARAMETERS },
    },
  };
}
