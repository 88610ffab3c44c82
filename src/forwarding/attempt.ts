import { EventEmitter } from 'node:events';
import { request, type Dispatcher } from 'undici';
import { parseRetryAfter } from './backoff';
import { PermanentDeliveryError, TransientDeliveryError } from './delivery-errors';
import { classifyNetworkError, summarise, type FailureFacts } from './failure';
import type { DeliveryResult } from '../model/jobs';
import type { OutgoingRequest } from './build-request';
import type { Target } from '../model/target-schema';
import { stripControl } from '../logging/printable';
import { packageInfo } from '../config/project-root';
import { TransformDeliveryError } from './transform-step';

const EXCERPT_BYTES = 512;
/** On every forwarded HTTP request, after the target's own headers: merchants allow-list and debug by it. */
export const USER_AGENT = `${packageInfo().name}/${packageInfo().version}`;
const ALWAYS_RETRIED = new Set([408, 429]);

/** What an attempt met, when it failed in a way we recognise; an unexpected error has no facts. */
export function failureFacts(err: unknown): FailureFacts | undefined {
  if (
    err instanceof PermanentDeliveryError ||
    err instanceof TransientDeliveryError ||
    err instanceof TransformDeliveryError
  )
    return err.facts;
  return undefined;
}

/**
 * One POST to a target. 2xx within the timeout is success; network errors, timeouts, 408, 429, 5xx
 * and the target's `retryStatuses` throw TransientDeliveryError; any other status is permanent.
 *
 * The whole attempt (connection, headers and the answer's body) ends by `timeoutMs`: undici's own
 * timers bound only the wait for the headers and each pause in the body, so a target trickling a
 * byte every 100 ms could otherwise hold a delivery slot for as long as it liked. One timer per
 * attempt, and an EventEmitter as the signal (undici takes either): an AbortSignal per request cost
 * measurably in the drain profile.
 */
export async function attemptDelivery(
  target: Target,
  dispatcher: Dispatcher,
  req: OutgoingRequest,
): Promise<DeliveryResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const deadline = new EventEmitter();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    deadline.emit('abort');
  }, target.timeoutMs);
  try {
    let res: Dispatcher.ResponseData;
    try {
      // An HTTP target has a url (the schema requires url or destination; createTransport picks by it).
      res = await request(target.url!, {
        method: 'POST',
        headers: { ...req.headers, 'user-agent': USER_AGENT },
        body: req.body,
        dispatcher,
        signal: deadline,
        headersTimeout: target.timeoutMs,
        bodyTimeout: target.timeoutMs,
      });
    } catch (err) {
      const e = err as Error & { code?: string; cause?: { code?: string } };
      const code = e.code ?? e.cause?.code;
      const facts: FailureFacts = {
        errorClass: timedOut ? 'timeout' : classifyNetworkError(code),
        latencyMs: elapsed(),
      };
      throw new TransientDeliveryError(
        summarise(facts, code ?? e.message, target.timeoutMs),
        undefined,
        undefined,
        undefined,
        facts,
      );
    }
    const status = res.statusCode;
    if (status >= 200 && status < 300) {
      // A success's answer is not kept: read and dropped (up to undici's dump limit; a larger one closes the
      // connection).
      await res.body.dump().catch(() => undefined);
      return { status, latencyMs: elapsed() };
    }
    const excerpt = await readExcerpt(res.body);
    const latencyMs = elapsed();
    const facts: FailureFacts = { errorClass: 'http_status', status, latencyMs, responseExcerpt: excerpt };
    const summary = summarise(facts, '', target.timeoutMs);
    if (status >= 500 || ALWAYS_RETRIED.has(status) || target.retryStatuses.includes(status)) {
      throw new TransientDeliveryError(summary, status, parseRetryAfter(res.headers['retry-after']), excerpt, facts);
    }
    throw new PermanentDeliveryError(`${summary} (not retried)`, status, excerpt, facts);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The first EXCERPT_BYTES of the answer, control characters removed, for the dead letter; the rest is not read: the
 * body is destroyed (which closes that connection) rather than drained, so a large or endless answer costs no more than
 * this. A body cut short (by us, the deadline or the target) still has its status.
 */
async function readExcerpt(body: Dispatcher.ResponseData['body']): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      chunks.push(chunk as Buffer);
      size += (chunk as Buffer).length;
      if (size >= EXCERPT_BYTES) break; // leaving the loop destroys the body
    }
  } catch {
    // cut short: the excerpt is a courtesy
  }
  // Stored for operators' screens: no terminal escapes from the target's text.
  return stripControl(Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8'));
}
