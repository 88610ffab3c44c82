import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { EVENT_TABLE, type EventDefinition } from '../model/event-table';
import { isRefusal, precheckNotification, receiveNotification, type ReceiveDeps } from '../receiving/receive';
import { send } from './answer';
import type { PublicAnswers } from './public-answers';
import { BudgetExhaustedError, BudgetHold, type BodyBudget } from './body-budget';
import { bodyLeftUnread, readBody, RequestAbandonedError } from './read-body';
import { tracing } from '../tracing/tracing';

export interface NotifyOptions {
  basePath: string;
  bodyLimitBytes: number;
  answers: PublicAnswers;
  /** When set, only requests whose address (`req.ip`, so after `trust proxy`) it allows reach verification. */
  sourceAllowed?: (address: string | undefined) => boolean;
  /** The process's budget for bodies not yet verified. @defaultValue undefined (unbounded) */
  bodyBudget?: BodyBudget;
}

/** What the notify handler needs of a request beyond Node's own: its path and who sent it. */
export interface NotifyRequest {
  /** The path without the query (Express's `req.path`). */
  path: string;
  /** The request target as received (Express's `req.originalUrl`): what the platform signed. */
  target: string;
  /** The sender's address as the allowlists judge it (Express's `req.ip`, after `trust proxy`), asked when needed. */
  ip: () => string | undefined;
}

/** The notify paths, served from the event table: a map lookup on the path, no router. */
export interface NotifyHandler {
  /** The event whose notify path this is, if any. */
  route(path: string): EventDefinition | undefined;
  /**
   * Serves one request to a notify path: an error that is not an answered refusal goes to `fail` (the
   * app's error handler). The request must carry a Host, or be HTTP/1.0 (see `notifyMiddleware`).
   */
  serve(
    req: IncomingMessage,
    res: ServerResponse,
    definition: EventDefinition,
    request: NotifyRequest,
    fail: (err: unknown) => void,
  ): Promise<void>;
}

/**
 * No body parser (the signature is over the raw bytes), and prepared answers (helmet's headers
 * included) written in one go.
 */
export function notifyHandler(
  deps: ReceiveDeps,
  { basePath, bodyLimitBytes, answers, sourceAllowed, bodyBudget }: NotifyOptions,
): NotifyHandler {
  const routes = new Map<string, EventDefinition>(EVENT_TABLE.map((e) => [basePath + e.path, e]));

  async function serve(
    req: IncomingMessage,
    res: ServerResponse,
    definition: EventDefinition,
    request: NotifyRequest,
    fail: (err: unknown) => void,
  ): Promise<void> {
    if (sourceAllowed !== undefined && !sourceAllowed(request.ip()))
      return refuseSource(deps, req, res, definition, answers, request);
    if (req.method !== 'POST') return send(res, answers.notifyMethod, bodyLeftUnread(req));
    const startedAt = Date.now();
    const startedAtHr = performance.now();
    // The route, never the request target: the callback base path is a secret.
    const span = tracing.notify(definition.type, definition.path, req.headers.traceparent);
    const checked = precheckNotification(deps, definition, request.target, req.headers, startedAtHr, span);
    if (isRefusal(checked)) {
      send(res, answers.rejected[checked.class], bodyLeftUnread(req));
      span?.end(res.statusCode);
      return;
    }
    // Held from before the body is read until the notification is verified and stored (or refused).
    const hold = bodyBudget === undefined ? undefined : new BudgetHold(bodyBudget);
    try {
      const body = await readBody(req, bodyLimitBytes, hold);
      const result = await receiveNotification(deps, {
        definition,
        target: request.target,
        headers: req.headers,
        checked,
        body,
        startedAt,
        startedAtHr,
        source: request.ip,
        span,
      });
      if (result.kind === 'acknowledged') send(res, answers.success);
      else if (result.kind === 'rejected') send(res, answers.rejected[result.class]);
      else send(res, answers.unavailable);
    } catch (err) {
      // Already answered and counted by the server's clientError handler, or the client is gone.
      if (err instanceof RequestAbandonedError) return;
      if (err instanceof BudgetExhaustedError) return refuseOverBudget(deps, req, res, definition, answers, err);
      fail(err);
    } finally {
      hold?.release();
      span?.end(res.statusCode);
    }
  }

  return { route: (path) => routes.get(path), serve };
}

/**
 * The app's first middleware, so it speaks for every path: the missing Host, then the notify paths
 * (see notifyHandler). The public app's front serves the common case without Express (app.ts).
 */
export function notifyMiddleware(deps: ReceiveDeps, notify: NotifyHandler, answers: PublicAnswers) {
  return (req: Request, res: Response, next: NextFunction): Promise<void> | void => {
    // The server leaves Host to us (RFC 9112 3.2).
    if (req.headers.host === undefined && req.httpVersionMinor === 1) return refuseMissingHost(deps, req, res, answers);
    const definition = notify.route(req.path);
    if (!definition) return next();
    return notify.serve(req, res, definition, { path: req.path, target: req.originalUrl, ip: () => req.ip }, next);
  };
}

/** 503 with Retry-After, the body left unread and the connection closed: the platform retries later. */
function refuseOverBudget(
  deps: ReceiveDeps,
  req: IncomingMessage,
  res: ServerResponse,
  definition: EventDefinition,
  answers: PublicAnswers,
  err: BudgetExhaustedError,
): void {
  deps.metrics.portRefusals.labels('body_budget').inc();
  deps.logger.repeated('warn', 'body_budget', 'notification refused: the budget for unverified bodies is in use', {
    eventType: definition.type,
    status: 503,
    outcome: 'rejected',
    reason: 'body_budget',
    budgetBytes: err.budgetBytes,
    declaredBytes: Number(req.headers['content-length']) || undefined,
  });
  send(res, answers.unavailable, true);
}

function refuseSource(
  deps: ReceiveDeps,
  req: IncomingMessage,
  res: ServerResponse,
  definition: EventDefinition,
  answers: PublicAnswers,
  request: NotifyRequest,
): void {
  deps.metrics.eventType(definition.type).rejected('source_not_allowed').inc();
  deps.logger.warn('notification refused: source address not allowed', {
    eventType: definition.type,
    outcome: 'rejected',
    reason: 'source_not_allowed',
    source: request.ip(),
    path: request.path,
  });
  send(res, answers.forbidden, bodyLeftUnread(req));
}

function refuseMissingHost(deps: ReceiveDeps, req: Request, res: Response, answers: PublicAnswers): void {
  deps.metrics.portRefusals.labels('missing_host').inc();
  deps.logger.warn('request refused', { status: 400, outcome: 'rejected', reason: 'missing_host', path: req.path });
  send(res, answers.missingHost, bodyLeftUnread(req));
}
