import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { Logger } from '../logging/logger';
import type { Metrics } from '../monitoring/metrics';
import { send } from './answer';
import { clientErrorHandler, connectHandler } from './client-errors';
import { bodyLeftUnread } from './read-body';
import { publicAnswers } from './public-answers';

export interface PublicServerOptions {
  /** Whole request, headers and body. @defaultValue 15000 */
  requestTimeoutMs: number;
  /** Request line and headers. @defaultValue 10000 */
  headersTimeoutMs: number;
  /** Idle time between requests on a kept-alive connection. @defaultValue 5000 */
  keepAliveTimeoutMs: number;
  /** Concurrent connections; more are closed on arrival. @defaultValue 1024 */
  maxConnections: number;
  /** For the 413 answer's text. @defaultValue 262144 */
  bodyLimitBytes: number;
}

/**
 * Node looks for connections past their header or request timeout only this often (30 s unless told).
 * Every 250 ms keeps a stalled connection's life within its timeout plus a quarter second, which
 * leaves most of the promised 2 s for a busy event loop (on the loaded 2-core test machine timers ran
 * up to a second late); the check walks only the connections that are mid-request.
 */
const CONNECTIONS_CHECKING_INTERVAL_MS = 250;
/** At most one line per this interval about the connection cap, however many connections it refuses. */
const DROP_LOG_INTERVAL_MS = 10_000;

/** The public port's HTTP server around the app, hardened against slow and malformed clients. Never listens. */
export function createPublicServer(
  app: RequestListener,
  opts: PublicServerOptions,
  logger: Logger,
  metrics: Metrics,
): Server {
  const answers = publicAnswers(opts.bodyLimitBytes);
  const server = createServer(
    {
      requestTimeout: opts.requestTimeoutMs,
      headersTimeout: opts.headersTimeoutMs,
      keepAliveTimeout: opts.keepAliveTimeoutMs,
      connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS,
      // Node would answer a missing Host itself, without our envelope; the app does it instead.
      requireHostHeader: false,
    },
    app,
  );
  server.maxConnections = opts.maxConnections;
  server.on('clientError', clientErrorHandler(logger, metrics, answers));
  server.on('connect', connectHandler(logger, metrics, answers));
  // Without this listener Node answers an `Expect` other than 100-continue with a bare 417.
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    metrics.portRefusals.labels('expectation').inc();
    logger.warn('request refused', { status: 417, outcome: 'rejected', reason: 'expectation', path: req.url });
    send(res, answers.expectationFailed, bodyLeftUnread(req));
  });

  let dropped = 0;
  let lastDropLog = 0;
  server.on('drop', () => {
    metrics.portRefusals.labels('connection_cap').inc();
    dropped++;
    const now = Date.now();
    if (now - lastDropLog < DROP_LOG_INTERVAL_MS) return;
    logger.warn('connections refused: at the connection cap', {
      outcome: 'rejected',
      reason: 'connection_cap',
      maxConnections: opts.maxConnections,
      refusedSinceLastLine: dropped,
    });
    lastDropLog = now;
    dropped = 0;
  });
  return server;
}
