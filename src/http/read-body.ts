import type { IncomingMessage } from 'node:http';

export class BodyTooLargeError extends Error {
  readonly status = 413;
  constructor(readonly limit: number) {
    super(`body exceeds ${limit} bytes`);
    this.name = 'BodyTooLargeError';
    Object.setPrototypeOf(this, new.target.prototype);
  }
}

/**
 * The request ended before its body did: the client went away, or the server cut the connection
 * (a timeout or a framing error, which the clientError handler has already answered and counted).
 */
export class RequestAbandonedError extends Error {
  constructor(cause: Error) {
    super(`request abandoned: ${cause.message}`, { cause });
    this.name = 'RequestAbandonedError';
    Object.setPrototypeOf(this, new.target.prototype);
  }
}

/**
 * Reads the raw body bytes as received, refusing early when the declared or actual size is over the
 * limit. What is left unread on a refusal is not drained here: the answer closes the connection.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (declared > limit) return Promise.reject(new BodyTooLargeError(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        reject(new BodyTooLargeError(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
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
