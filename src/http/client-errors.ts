import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from '../logging/logger';
import type { Metrics } from '../monitoring/metrics';
import type { Answer } from './answer';
import type { PublicAnswers } from './public-answers';

type ClientError = Error & { code?: string };

/** The client went away: a reset, or a close in the middle of a request. */
const ABORTS = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'HPE_INVALID_EOF_STATE']);

function refusalOf(code: string | undefined, answers: PublicAnswers): { answer: Answer; reason: string } {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return { answer: answers.headersTooLarge, reason: 'headers_too_large' };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { answer: answers.tooLarge, reason: 'chunk_extensions_too_large' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { answer: answers.requestTimeout, reason: 'request_timeout' };
    default:
      return { answer: answers.badRequest, reason: 'malformed_request' };
  }
}

/**
 * The server's `clientError` handler: what Node would answer itself (400 for a malformed request,
 * 408 after the header or request timeout, 431 for oversized headers) answered with our envelope
 * and security headers instead, then the connection closed. Like Node's own handler, it writes only
 * when no answer to this connection has started, so the peer never gets a corrupted stream.
 */
export function clientErrorHandler(logger: Logger, metrics: Metrics, answers: PublicAnswers) {
  return (err: ClientError, duplex: Duplex): void => {
    const socket = duplex as Socket;
    // Node's internal link from a socket to the answer in progress on it (the same check Node makes).
    const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined;
    if (err.code !== undefined && ABORTS.has(err.code)) {
      const phase = inFlight === undefined ? 'request' : inFlight.req.complete ? 'response' : 'body';
      metrics.clientAborts.labels(phase).inc();
      logger.debug('client aborted', { phase, code: err.code });
      if (err.code !== 'HPE_INVALID_EOF_STATE') return void socket.destroy();
    }
    const { answer, reason } = refusalOf(err.code, answers);
    if (err.code !== 'HPE_INVALID_EOF_STATE') {
      metrics.portRefusals.labels(reason).inc();
      logger.warn('request refused', { status: answer.status, outcome: 'rejected', reason, code: err.code });
    }
    if (socket.writable && (inFlight === undefined || !inFlight.headersSent)) {
      socket.end(answer.raw, () => socket.destroy());
    } else {
      socket.destroy();
    }
  };
}

/** CONNECT asks for a tunnel, which this port never gives; Node alone would drop it without an answer. */
export function connectHandler(logger: Logger, metrics: Metrics, answers: PublicAnswers) {
  return (_req: unknown, duplex: Duplex): void => {
    metrics.portRefusals.labels('connect_method').inc();
    logger.warn('request refused', { status: 405, outcome: 'rejected', reason: 'connect_method' });
    duplex.end(answers.connectMethod.raw, () => duplex.destroy());
  };
}
