import type { Dispatcher } from 'undici';
import { PermanentDeliveryError, TransientDeliveryError } from './delivery-errors';
import type { FailureFacts } from './failure';
import type { DeliveryResult } from '../model/jobs';
import type { OutgoingRequest } from './build-request';
import type { Target } from '../model/target-schema';
import { packageInfo } from '../config/project-root';
import { TransformDeliveryError } from './transform-step';
import { PostAnswer } from './post-answer';

/** On every forwarded HTTP request, after the target's own headers: merchants allow-list and debug by it. */
export const USER_AGENT = `${packageInfo().name}/${packageInfo().version}`;

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

/** Where a target's POSTs go, from its URL, parsed once per target rather than once per attempt. */
export interface HttpEndpoint {
  origin: string;
  path: string;
}

export function httpEndpoint(url: string): HttpEndpoint {
  const parsed = new URL(url);
  return { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
}

/**
 * One POST to a target. 2xx within the timeout is success; network errors, timeouts, 408, 429, 5xx
 * and the target's `retryStatuses` throw TransientDeliveryError; any other status is permanent.
 *
 * The whole attempt (connection, headers and the answer's body) ends by `timeoutMs`: undici's own
 * timers bound only the wait for the headers and each pause in the body, so a target trickling a
 * byte every 100 ms could otherwise hold a delivery slot for as long as it liked.
 *
 * A handler on the dispatcher ({@link PostAnswer}) rather than undici's `request()`: nothing reads the
 * answer as a stream, and all that is kept of its body is a failure's first bytes, so the async
 * resource, body stream and abort signal that `request()` makes per request bought nothing here.
 */
export function attemptDelivery(
  target: Target,
  dispatcher: Dispatcher,
  req: OutgoingRequest,
  // An HTTP target has a url (the schema requires url or destination; createTransport picks by it).
  endpoint: HttpEndpoint = httpEndpoint(target.url!),
): Promise<DeliveryResult> {
  return new Promise((resolve, reject) => {
    const answer = new PostAnswer(target, resolve, reject);
    dispatcher.dispatch(
      {
        origin: endpoint.origin,
        path: endpoint.path,
        method: 'POST',
        headers: { ...req.headers, 'user-agent': USER_AGENT },
        body: req.body,
        headersTimeout: target.timeoutMs,
        bodyTimeout: target.timeoutMs,
      },
      answer,
    );
  });
}
