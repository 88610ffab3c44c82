import { answerFactory, type Answer } from './answer';
import { envelope, RET_CODES, SUCCESS } from './envelope';

const built = new Map<number, PublicAnswers>();

/**
 * Every answer the public port gives, built once per process (the app and the server around it share
 * them). Their bodies are fixed (no request data in them), so each is a few prepared bytes and a
 * frozen header set.
 */
export function publicAnswers(bodyLimitBytes: number): PublicAnswers {
  let answers = built.get(bodyLimitBytes);
  if (answers === undefined) {
    answers = buildAnswers(bodyLimitBytes);
    built.set(bodyLimitBytes, answers);
  }
  return answers;
}

function buildAnswers(bodyLimitBytes: number) {
  const answer = answerFactory();
  const forbidden = answer(403, envelope(RET_CODES.forbidden, 'Forbidden: source address not allowed'));
  return {
    success: answer(200, SUCCESS),
    /** Liveness carries the envelope too, and keeps the `status` field load balancers look for. */
    health: answer(200, { ...SUCCESS, status: 'ok' }),
    rejected: {
      header: answer(401, envelope(RET_CODES.header, 'Unauthorized: missing or malformed signature header')),
      timestamp: answer(401, envelope(RET_CODES.timestamp, 'Unauthorized: timestamp outside the allowed window')),
      signature: answer(401, envelope(RET_CODES.signature, 'Unauthorized: signature missing or invalid')),
      request: answer(
        400,
        envelope(RET_CODES.badRequest, 'Bad Request: X-Merch-Id must be 1 to 64 characters of A-Z a-z 0-9 _ . : -'),
      ),
      source: forbidden,
    },
    forbidden,
    notFound: answer(404, envelope(RET_CODES.notFound, 'Not Found')),
    notifyMethod: answer(
      405,
      envelope(RET_CODES.methodNotAllowed, 'Method Not Allowed: notify paths accept POST only'),
      { allow: 'POST' },
    ),
    /** CONNECT (a proxy tunnel), which Node would otherwise drop without a word. */
    connectMethod: answer(405, envelope(RET_CODES.methodNotAllowed, 'Method Not Allowed')),
    healthMethod: answer(
      405,
      envelope(RET_CODES.methodNotAllowed, 'Method Not Allowed: /healthz accepts GET and HEAD'),
      { allow: 'GET, HEAD' },
    ),
    tooLarge: answer(413, envelope(RET_CODES.payloadTooLarge, `Payload Too Large: limit is ${bodyLimitBytes} bytes`)),
    badRequest: answer(400, envelope(RET_CODES.badRequest, 'Bad Request')),
    missingHost: answer(400, envelope(RET_CODES.badRequest, 'Bad Request: HTTP/1.1 requires a Host header')),
    expectationFailed: answer(
      417,
      envelope(RET_CODES.expectationFailed, 'Expectation Failed: only 100-continue is understood'),
    ),
    requestTimeout: answer(408, envelope(RET_CODES.requestTimeout, 'Request Timeout')),
    headersTooLarge: answer(431, envelope(RET_CODES.headersTooLarge, 'Request Header Fields Too Large')),
    internal: answer(500, envelope(RET_CODES.internal, 'Internal Server Error')),
    unavailable: answer(
      503,
      envelope(RET_CODES.unavailable, 'Service Unavailable: notification not stored, retry later'),
      { 'retry-after': '5' },
    ),
  } satisfies Record<string, Answer | Record<string, Answer>>;
}

export type PublicAnswers = ReturnType<typeof buildAnswers>;
