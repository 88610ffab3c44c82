import { decodeRawBody, type DeliveryJob } from '../model/jobs';
import type { RequestSigner } from './signer';
import type { Target } from '../model/target-schema';

export interface OutgoingRequest {
  headers: Record<string, string>;
  /** A string when the platform's body is UTF-8 (as JSON is): one string per request, no buffers to copy. */
  body: string | Buffer;
}

/**
 * `standard`: Standard Webhooks JSON whose `data` is the platform's body spliced in as received (no
 * re-serialisation, so unknown fields and number formats survive), signed with the target's secrets;
 * or, given `transformed` (what the target's transform returned), that body with the same headers.
 * `passthrough`: the platform's bytes and signature headers, unchanged, for a system that verifies the
 * platform's signature itself; `x-forwarded-uri` tells it which request target was signed.
 */
export function buildRequest(
  job: DeliveryJob,
  target: Target,
  sign: RequestSigner | undefined,
  now: Date,
  transformed?: string,
): OutgoingRequest {
  // The bytes as received: the stored string itself when they are UTF-8, decoded only when they are not.
  const raw = job.rawBodyEncoding === 'utf8' ? job.rawBody : decodeRawBody(job);
  if (target.format === 'passthrough') {
    const headers: Record<string, string> = {
      ...target.headers,
      ...job.signatureHeaders,
      'content-type': job.contentType ?? 'application/json',
      'webhook-id': job.eventId,
      'x-forwarded-uri': job.path,
      ...(job.merchantId ? { 'x-merch-id': job.merchantId } : {}),
      ...provenanceHeaders(job),
    };
    // The platform's timestamp ages on retries and replays; our own signature is always fresh.
    if (sign) {
      headers['webhook-timestamp'] = String(Math.floor(now.getTime() / 1000));
      headers['webhook-signature'] = sign(job.eventId, now, raw);
    }
    return { headers, body: raw };
  }
  // A target's transform gives the whole body in place of the envelope; the headers and signature are the same.
  const body = transformed ?? envelope(job, raw);
  const headers: Record<string, string> = {
    ...target.headers,
    'content-type': 'application/json',
    'webhook-id': job.eventId,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
  };
  if (sign) headers['webhook-signature'] = sign(job.eventId, now, body);
  if (job.merchantId) headers['x-merch-id'] = job.merchantId;
  Object.assign(headers, provenanceHeaders(job));
  return { headers, body };
}

function envelope(job: DeliveryJob, raw: string | Buffer): string | Buffer {
  const head =
    `{"id":${JSON.stringify(job.eventId)},"type":${JSON.stringify(job.eventType)},` +
    `"timestamp":${JSON.stringify(job.receivedAt)},${envelopeProvenance(job)}"data":`;
  return typeof raw === 'string' ? `${head}${raw}}` : Buffer.concat([Buffer.from(head), raw, Buffer.from('}')]);
}

/**
 * Where the event came from, on every format: the platform environment whose key verified it,
 * whether an operator corrected its body (the platform's signature no longer covers it), and whether
 * it was built from the answer to an inquiry rather than sent as a notification. Set after the
 * target's own headers, so no configured header can claim another environment.
 */
function provenanceHeaders(job: Pick<DeliveryJob, 'environment' | 'corrected' | 'source'>): Record<string, string> {
  const headers: Record<string, string> = {};
  if (job.environment) headers['x-webhook-environment'] = job.environment;
  if (job.corrected) headers['x-webhook-corrected'] = 'true';
  if (job.source) headers['x-webhook-source'] = job.source;
  return headers;
}

/** The standard envelope's `environment` (`corrected`, `source`) members, each followed by a comma. */
function envelopeProvenance(job: Pick<DeliveryJob, 'environment' | 'corrected' | 'source'>): string {
  const environment = job.environment ? `"environment":${JSON.stringify(job.environment)},` : '';
  const source = job.source ? `"source":${JSON.stringify(job.source)},` : '';
  return `${job.corrected ? `${environment}"corrected":true,` : environment}${source}`;
}
