import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from '../logging/logger';
import { send } from './answer';
import { ServiceError } from '../model/errors';
import type { PublicAnswers } from './public-answers';
import { BodyTooLargeError, bodyLeftUnread } from './read-body';

export function notFound(answers: PublicAnswers) {
  return (req: Request, res: Response): void => send(res, answers.notFound, bodyLeftUnread(req));
}

/** Maps every error to an envelope through the one writer; callers never see a stack trace. */
export function errorHandler(logger: Logger, answers: PublicAnswers) {
  const answer = errorAnswer(logger, answers);
  return (err: unknown, req: Request, res: Response, _next: NextFunction): void => answer(err, req, res, req.path);
}

/** The error handler's answer, for a request served without Express (`path` as Express's `req.path`). */
export function errorAnswer(logger: Logger, answers: PublicAnswers) {
  return (err: unknown, req: IncomingMessage, res: ServerResponse, path: string): void => {
    if (err instanceof BodyTooLargeError) {
      logger.warn('request refused: body too large', {
        path,
        outcome: 'rejected',
        reason: 'body_too_large',
        limit: err.limit,
      });
      return send(res, answers.tooLarge, true); // the rest of the body stays unread
    }
    if (err instanceof ServiceError && err.status < 500) {
      logger.warn('request refused', { path, status: err.status, error: err.message });
      return send(res, answers.badRequest, bodyLeftUnread(req));
    }
    logger.error('request failed', { path, error: (err as Error).message, stack: (err as Error).stack });
    if (res.headersSent) return void res.destroy();
    send(res, answers.internal, bodyLeftUnread(req));
  };
}
