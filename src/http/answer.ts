import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { helmetHeaders } from './security-headers';

type Headers = Readonly<Record<string, string | number>>;

/**
 * One fixed answer of the public port, prepared once at start: its status, the envelope bytes and
 * the complete header set (helmet's security headers included), so sending it allocates nothing.
 */
export interface Answer {
  readonly status: number;
  readonly body: Buffer;
  readonly headers: Headers;
  /** The same headers plus `connection: close`, for an answer that leaves part of the request unread. */
  readonly closing: Headers;
  /** The whole answer as bytes, for a socket the HTTP machinery has given up on (see client-errors.ts). */
  readonly raw: Buffer;
}

/** Builds answers that all carry the same security headers, captured from helmet once. */
export function answerFactory(): (status: number, body: object, extra?: Record<string, string>) => Answer {
  const security = helmetHeaders();
  return (status, body, extra = {}) => {
    const bytes = Buffer.from(JSON.stringify(body), 'utf8');
    const headers = {
      ...security,
      'content-type': 'application/json; charset=utf-8',
      'content-length': bytes.length,
      ...extra,
    };
    const closing = { ...headers, connection: 'close' };
    const head = Object.entries(closing)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    const raw = Buffer.concat([
      Buffer.from(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n${head}\r\n`, 'latin1'),
      bytes,
    ]);
    return Object.freeze({
      status,
      body: bytes,
      headers: Object.freeze(headers),
      closing: Object.freeze(closing),
      raw,
    });
  };
}

/**
 * The one writer of the public port: every answer, refusals and errors included, leaves here.
 * `close` asks Node to close the connection after the answer instead of reading what is left.
 */
export function send(res: ServerResponse, answer: Answer, close = false): void {
  res.writeHead(answer.status, close ? answer.closing : answer.headers);
  if (close && res.socket) lingerBeforeClosing(res.socket);
  res.end(answer.body);
}

/** How long a connection closed with part of its request unread stays open after the answer. */
const LINGER_MS = 1000;

/**
 * A refusal that leaves the request's body unread closes the connection, but closing a socket with
 * unread bytes in its receive buffer sends a reset, and a client still writing its body then loses
 * the answer it was sent (it reads ECONNRESET or EPIPE instead of the 413). So the answer is followed
 * by our FIN at once and the socket is destroyed only `LINGER_MS` later, as nginx's lingering close
 * does: the client reads the answer and the end of the stream first.
 */
function lingerBeforeClosing(socket: Socket): void {
  socket.destroySoon = function lingering(this: Socket) {
    this.end();
    const timer = setTimeout(() => this.destroy(), LINGER_MS);
    timer.unref();
    this.once('close', () => clearTimeout(timer));
  };
}
