import type { IncomingMessage, RequestListener } from 'node:http';
import express, { type Request, type Response } from 'express';
import type { Logger } from '../logging/logger';
import type { ReceiveDeps } from '../receiving/receive';
import { send } from './answer';
import { errorAnswer, errorHandler, notFound } from './errors';
import { notifyHandler, notifyMiddleware } from './notify-routes';
import { publicAnswers, type PublicAnswers } from './public-answers';
import { bodyLeftUnread } from './read-body';
import type { BodyBudget } from './body-budget';

export interface AppDeps extends ReceiveDeps {
  logger: Logger;
  /** Prefix in front of every notify path. @defaultValue '' */
  basePath: string;
  /** @defaultValue 262144 (256 KiB) */
  bodyLimitBytes: number;
  /** Notify requests from addresses it refuses get 403. @defaultValue undefined (any address) */
  sourceAllowed?: (address: string | undefined) => boolean;
  /** Express's `trust proxy`: whose X-Forwarded-For decides `req.ip`. @defaultValue undefined (none) */
  trustProxy?: string[];
  /** The process's budget for bodies not yet verified. @defaultValue undefined (unbounded) */
  bodyBudget?: BodyBudget;
}

/**
 * The public app: the seven notify paths and liveness, nothing else. Never listens. No Express
 * router and no per-request middleware: every answer is one of the prepared ones (see
 * public-answers.ts), so each carries the envelope and the same security headers.
 *
 * A POST to a notify path, with a Host and its path as sent (`/…`, no fragment), is served by the
 * front without entering Express: Express's request handling (its router, the request and response
 * prototypes swapped per request) cost more than every feature of the notify path together. Any
 * other request goes to the Express app, whose first middleware serves the notify paths the same way.
 */
export function createApp(deps: AppDeps): RequestListener {
  const answers = publicAnswers(deps.bodyLimitBytes);
  const notify = notifyHandler(deps, {
    basePath: deps.basePath,
    bodyLimitBytes: deps.bodyLimitBytes,
    answers,
    sourceAllowed: deps.sourceAllowed,
    bodyBudget: deps.bodyBudget,
  });
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  if (deps.trustProxy !== undefined) app.set('trust proxy', deps.trustProxy);
  app.use(notifyMiddleware(deps, notify, answers));
  app.use(liveness(answers));
  app.use(notFound(answers));
  app.use(errorHandler(deps.logger, answers));
  const failed = errorAnswer(deps.logger, answers);
  return (req, res) => {
    const path = frontPath(req);
    const definition = path === undefined ? undefined : notify.route(path);
    if (path === undefined || definition === undefined) return void app(req, res);
    // Express's own address (`req.ip`, after `trust proxy`), from its request prototype, as it would set it.
    const ip = () => (Object.setPrototypeOf(req, app.request) as Request).ip;
    const fail = (err: unknown) => failed(err, req, res, path);
    notify.serve(req, res, definition, { path, target: req.url!, ip }, fail).catch(fail);
  };
}

/**
 * The path of a POST the front may serve, as Express's `req.path` would read it; undefined for a
 * request Express is to handle: no Host (refused there), a target not in origin form, or one with a
 * character that makes Express parse the URL in full (a fragment, white space).
 */
function frontPath(req: IncomingMessage): string | undefined {
  const url = req.url;
  if (req.method !== 'POST' || req.headers.host === undefined || url === undefined || url.charCodeAt(0) !== 47)
    return undefined;
  if (ODD_TARGET.test(url)) return undefined;
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

/** What makes parseurl (Express's `req.path`) leave its fast path: a fragment, white space, U+00A0, U+FEFF. */
const ODD_TARGET = /[\t\n\f\r #\u00a0\ufeff]/;

/** Handled here rather than by `app.get`, whose router would answer OPTIONS itself, without our headers. */
function liveness(answers: PublicAnswers) {
  return (req: Request, res: Response, next: () => void): void => {
    if (req.path !== '/healthz') return next();
    if (req.method === 'GET' || req.method === 'HEAD') return send(res, answers.health);
    send(res, answers.healthMethod, bodyLeftUnread(req));
  };
}
