import type { IncomingMessage } from 'node:http';
import { BudgetExhaustedError, type BudgetHold } from './body-budget';
import { ServiceError } from '../model/errors';

export class BodyTooLargeError extends ServiceError {
  readonly code = 'body_too_large';
  readonly status = 413;
  constructor(readonly limit: number) {
    super(`body exceeds ${limit} bytes`);
  }
}

/**
 * The request ended before its body did: the client went away, or the server cut the connection
 * (a timeout or a framing error, which the clientError handler has already answered and counted).
 */
export class RequestAbandonedError extends ServiceError {
  readonly code = 'request_abandoned';
  readonly status = 400;
  constructor(cause: Error) {
    super(`request abandoned: ${cause.message}`, { cause });
  }
}

/**
 * Reads the raw body bytes as received, refusing early when the declared or actual size is over the
 * limit. What is left unread on a refusal is not drained here: the answer closes the connection.
 *
 * With a budget hold, the bytes are taken from the process's budget for unverified bodies before they
 * are read: a declared length at once (refused whole, before a byte of the body is read, when it does
 * not fit), a chunked body chunk by chunk. A declared length is read into one buffer of that size, so
 * the socket's read buffers are not kept alive by slices of them.
 */
export function readBody(req: IncomingMessage, limit: number, hold?: BudgetHold): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (declared > limit) return Promise.reject(new BodyTooLargeError(limit));
  const known = Number.isSafeInteger(declared) && declared >= 0 && req.headers['transfer-encoding'] === undefined;
  if (known && hold !== undefined && !hold.take(declared))
    return Promise.reject(new BudgetExhaustedError(hold.limitBytes));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const whole = known && declared > 0 ? Buffer.allocUnsafe(declared) : undefined;
    let size = 0;
    const onData = (chunk: Buffer) => {
      if (size + chunk.length > limit || (whole !== undefined && size + chunk.length > declared)) {
        cleanup();
        reject(new BodyTooLargeError(limit));
        return;
      }
      if (whole !== undefined) chunk.copy(whole, size);
      else if (hold !== undefined && !hold.take(chunk.length)) {
        cleanup();
        reject(new BudgetExhaustedError(hold.limitBytes));
        return;
      } else chunks.push(chunk);
      size += chunk.length;
    };
    const onEnd = () => {
      cleanup();
      if (whole !== undefined) resolve(size === declared ? whole : whole.subarray(0, size));
      else resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(new RequestAbandonedError(err));
    };
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

/**
 * Whether some of the request body may still be on the wire. An answer given before the body is read
 * then closes the connection: nothing more of an unauthenticated body is read, and no unread bytes
 * are left to be taken for the next request on that connection.
 */
export function bodyLeftUnread(req: IncomingMessage): boolean {
  if (req.complete) return false;
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}
