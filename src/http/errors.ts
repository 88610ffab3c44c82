import type { NextFunction, Request, Response } from 'express';
import type { Logger } from '../logging/logger';
import { RET_CODES, sendEnvelope } from './envelope';
import { BodyTooLargeError } from './read-body';

export function notFound(req: Request, res: Response): void {
  sendEnvelope(res, 404, RET_CODES.notFound, 'Not Found');
}

/** Maps every error to the envelope; callers never see a stack trace. */
export function errorHandler(logger: Logger) {
  return (err: unknown, req: Request, res: Response, _next: NextFunction): void => {
    if (err instanceof BodyTooLargeError) {
      logger.warn('request refused: body too large', { path: req.path, outcome: 'rejected', reason: 'body_too_large', limit: err.limit });
      res.setHeader('Connection', 'close');
      return sendEnvelope(res, 413, RET_CODES.payloadTooLarge, `Payload Too Large: limit is ${err.limit} bytes`);
    }
    const status = (err as { status?: number }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      logger.warn('request refused', { path: req.path, status, error: (err as Error).message });
      return sendEnvelope(res, status, RET_CODES.badRequest, 'Bad Request');
    }
    logger.error('request failed', { path: req.path, error: (err as Error).message, stack: (err as Error).stack });
    if (res.headersSent) return void res.end();
    sendEnvelope(res, 500, RET_CODES.internal, 'Internal Server Error');
  };
}
