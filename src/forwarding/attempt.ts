import { UnrecoverableError } from 'bullmq';
import { request, type Dispatcher } from 'undici';
import { parseRetryAfter, TransientDeliveryError } from './backoff';
import type { DeliveryResult } from '../pipeline/jobs';
import type { OutgoingRequest } from './build-request';
import type { Target } from './target-schema';

const EXCERPT_BYTES = 512;
const ALWAYS_RETRIED = new Set([408, 429]);

/** A successful attempt: the delivery job's return value. */
export type AttemptSuccess = DeliveryResult;

/** A permanent failure (a 4xx the target does not want retried): the delivery is dead-lettered now. */
export class PermanentDeliveryError extends UnrecoverableError {
  constructor(
    message: string,
    readonly status: number,
    readonly responseExcerpt: string,
  ) {
    super(message);
    this.name = 'PermanentDeliveryError';
    Object.setPrototypeOf(this, new.target.prototype);
  }
}

export interface FailureDetails {
  status?: number;
  responseExcerpt?: string;
}

export function failureDetails(err: unknown): FailureDetails {
  if (err instanceof PermanentDeliveryError) return { status: err.status, responseExcerpt: err.responseExcerpt };
  if (err instanceof TransientDeliveryError) return { status: err.status, responseExcerpt: err.responseExcerpt };
  return {};
}

/**
 * One POST to a target. 2xx within the timeout is success; network errors, timeouts, 408, 429, 5xx
 * and the target's `retryStatuses` throw TransientDeliveryError; any other status is permanent.
 */
export async function attemptDelivery(target: Target, dispatcher: Dispatcher, req: OutgoingRequest): Promise<AttemptSuccess> {
  const started = performance.now();
  let res: Dispatcher.ResponseData;
  try {
    res = await request(target.url, {
      method: 'POST',
      headers: req.headers,
      body: req.body,
      dispatcher,
      // undici's own timers bound the wait for headers and for each body chunk; no AbortSignal per request.
      headersTimeout: target.timeoutMs,
      bodyTimeout: target.timeoutMs,
    });
  } catch (err) {
    const e = err as Error & { code?: string };
    const timedOut = e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT';
    throw new TransientDeliveryError(timedOut ? `timeout after ${target.timeoutMs} ms` : `network error: ${e.code ?? e.message}`);
  }
  const excerpt = await readExcerpt(res.body);
  const latencyMs = Math.round(performance.now() - started);
  const status = res.statusCode;
  if (status >= 200 && status < 300) return { status, latencyMs };
  if (status >= 500 || ALWAYS_RETRIED.has(status) || target.retryStatuses.includes(status)) {
    throw new TransientDeliveryError(`HTTP ${status}`, status, parseRetryAfter(res.headers['retry-after']), excerpt);
  }
  throw new PermanentDeliveryError(`HTTP ${status} (not retried)`, status, excerpt);
}

async function readExcerpt(body: Dispatcher.ResponseData['body']): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      if (size < EXCERPT_BYTES) chunks.push(chunk as Buffer);
      size += (chunk as Buffer).length;
    }
  } catch {
    // a body cut short still tells us its status; the excerpt is a courtesy
  }
  return Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8');
}
