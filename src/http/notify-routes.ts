import type { ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { EVENT_TABLE, type EventDefinition } from '../events/table';
import { receiveNotification, type ReceiveDeps } from '../receiving/receive';
import { RET_CODES, SUCCESS } from './envelope';
import { readBody } from './read-body';
import { helmetHeaders } from './security-headers';

const REJECTION_MESSAGES = {
  header: 'Unauthorized: missing or malformed signature header',
  timestamp: 'Unauthorized: timestamp outside the allowed window',
  signature: 'Unauthorized: signature missing or invalid',
} as const;

/**
 * One middleware, the app's first, serves all seven notify paths from the event table: a map lookup
 * on the path, no per-path router layers, no body parser (the signature is over the raw bytes), and
 * helmet's headers written with the answer in one go rather than by a middleware per request.
 */
export function notifyMiddleware(deps: ReceiveDeps, basePath: string, bodyLimit: number) {
  const routes = new Map<string, EventDefinition>(EVENT_TABLE.map((e) => [basePath + e.path, e]));
  const security = helmetHeaders();
  const answer = (res: ServerResponse, status: number, body: string, extra?: Record<string, string>) => {
    res.writeHead(status, { ...security, 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), ...extra });
    res.end(body);
  };
  const envelope = (retCode: string, retMsg: string) => JSON.stringify({ ret_code: retCode, ret_msg: retMsg });
  const SUCCESS_BODY = JSON.stringify(SUCCESS);
  const REJECTION_BODIES = {
    header: envelope(RET_CODES.header, REJECTION_MESSAGES.header),
    timestamp: envelope(RET_CODES.timestamp, REJECTION_MESSAGES.timestamp),
    signature: envelope(RET_CODES.signature, REJECTION_MESSAGES.signature),
  };
  const UNAVAILABLE_BODY = envelope(RET_CODES.unavailable, 'Service Unavailable: notification not stored, retry later');
  const METHOD_BODY = envelope(RET_CODES.methodNotAllowed, 'Method Not Allowed: notify paths accept POST only');

  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const definition = routes.get(req.path);
    if (!definition) return next();
    if (req.method !== 'POST') return answer(res, 405, METHOD_BODY, { allow: 'POST' });
    try {
      const startedAt = Date.now();
      const startedAtHr = performance.now();
      const body = await readBody(req, bodyLimit);
      const result = await receiveNotification(deps, { definition, target: req.originalUrl, headers: req.headers, body, startedAt, startedAtHr });
      if (result.kind === 'acknowledged') answer(res, 200, SUCCESS_BODY);
      else if (result.kind === 'rejected') answer(res, 401, REJECTION_BODIES[result.class]);
      else answer(res, 503, UNAVAILABLE_BODY, { 'retry-after': '5' });
    } catch (err) {
      next(err);
    }
  };
}
