import { EVENT_TABLE, type EventDefinition } from '../model/event-table';
import { jsonSchemaOf } from './json-schema';

/** The Standard Webhooks headers on every forwarded request. */
export const WEBHOOK_PARAMETERS = {
  webhookId: {
    name: 'webhook-id',
    in: 'header',
    required: true,
    description: 'The event id: the same on every attempt, replay and resend. Use it as the idempotency key.',
    schema: { type: 'string', pattern: '^evt_[0-9a-f]{40}$' },
  },
  webhookTimestamp: {
    name: 'webhook-timestamp',
    in: 'header',
    required: true,
    description: 'Seconds since the epoch at this attempt.',
    schema: { type: 'string', pattern: '^\\d+$' },
  },
  webhookSignature: {
    name: 'webhook-signature',
    in: 'header',
    required: false,
    description:
      'When the target has a secret: `v1,<Base64 HMAC-SHA256>` of `<webhook-id>.<webhook-timestamp>.<body>`, one per ' +
      'secret, space-separated (rotation).',
    schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/=]+( v1,[A-Za-z0-9+/=]+)*$' },
  },
  userAgent: {
    name: 'user-agent',
    in: 'header',
    required: true,
    description:
      'On every HTTP request: `platform-webhook-receiver/<version>`, the version of the service that sent it ' +
      '(a broker message carries no such header).',
    schema: { type: 'string', pattern: '^platform-webhook-receiver/\\d+\\.\\d+\\.\\d+' },
  },
  forwardedMerchId: {
    name: 'x-merch-id',
    in: 'header',
    required: false,
    description: "The notification's `X-Merch-Id`, when it carried one.",
    schema: { type: 'string' },
  },
  environment: {
    name: 'x-webhook-environment',
    in: 'header',
    required: true,
    description:
      'The platform environment whose key verified the notification (`production`, `sandbox`, … as configured). A ' +
      'target takes only the environments it names.',
    schema: { type: 'string' },
  },
  traceparent: {
    name: 'traceparent',
    in: 'header',
    required: false,
    description:
      "While tracing is on: the W3C trace context of this attempt's span, so the target continues the notification's " +
      'trace. Not covered by `webhook-signature`.',
    schema: { type: 'string', pattern: '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' },
  },
  tracestate: {
    name: 'tracestate',
    in: 'header',
    required: false,
    description: "While tracing is on, when the attempt's span has one: the W3C trace state.",
    schema: { type: 'string' },
  },
  corrected: {
    name: 'x-webhook-corrected',
    in: 'header',
    required: false,
    description:
      '`true` when an operator replayed the notification with a corrected body: the platform did not sign these bytes.',
    schema: { type: 'string', const: 'true' },
  },
  source: {
    name: 'x-webhook-source',
    in: 'header',
    required: false,
    description:
      "`inquiry` when the event was built from the platform's signed answer to an inquiry about a notification " +
      'that never came (deliverFromInquiry, docs/reconciliation.md), not sent as a notification.',
    schema: { type: 'string', const: 'inquiry' },
  },
} as const;

function webhook(e: EventDefinition): Record<string, unknown> {
  return {
    post: {
      operationId: `deliver_${e.type.replace(/[^a-z0-9]+/g, '_')}`,
      summary: `${e.type}, as forwarded to a target (format: standard)`,
      description:
        'Sent to every target subscribed to this type. A target with a `transform` receives, with the same headers ' +
        'and a signature over the bytes sent, whatever JSON its transform returns instead of this body ' +
        "(docs/transformations.md). A `passthrough` target instead receives the platform's original body and " +
        'signature headers, with `webhook-id` and `x-forwarded-uri`.',
      tags: ['forwarded events'],
      // Signed when the target has a secret; a target without one gets unsigned requests.
      security: [{ webhookSignature: [] }, {}],
      parameters: Object.keys(WEBHOOK_PARAMETERS).map((name) => ({ $ref: `#/components/parameters/${name}` })),
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['id', 'type', 'timestamp', 'environment', 'data'],
              properties: {
                id: { type: 'string', description: 'The event id (equals `webhook-id`).' },
                type: { type: 'string', const: e.type },
                timestamp: {
                  type: 'string',
                  format: 'date-time',
                  description: 'When the service received the notification.',
                },
                environment: {
                  type: 'string',
                  description:
                    'The platform environment whose key verified the notification (equals `x-webhook-environment`).',
                },
                corrected: {
                  type: 'boolean',
                  const: true,
                  description:
                    'Present when an operator replayed the notification with a corrected body: `data` is not what ' +
                    'the platform signed.',
                },
                source: {
                  type: 'string',
                  const: 'inquiry',
                  description:
                    "Present when built from the platform's signed answer to an inquiry (equals `x-webhook-source`): " +
                    '`data` is that answer, not a notification.',
                },
                data: { ...jsonSchemaOf(e.schema), description: "The platform's body, byte for byte as received." },
              },
            },
          },
        },
      },
      responses: {
        '2XX': { description: 'Delivered; the delivery is done.' },
        default: {
          description:
            "408, 429, 5xx (and the target's `retryStatuses`), timeouts and network errors are retried with backoff; " +
            'any other status is permanent and dead-letters the delivery.',
        },
      },
    },
  };
}

/** `webhooks`: the seven forwarded event types, from the event table. */
export function forwardedWebhooks(): Record<string, unknown> {
  return Object.fromEntries(EVENT_TABLE.map((e) => [e.type, webhook(e)]));
}
