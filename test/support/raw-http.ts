import { connect, type Socket } from 'node:net';

export interface RawResponse {
  status: number;
  /** Header names in lower case; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: Buffer;
}

export interface Exchange {
  responses: RawResponse[];
  /** Bytes after the last complete response (a partial answer would show here). */
  rest: Buffer;
  /** The server closed (or reset) the connection before the client gave up waiting. */
  closedByServer: boolean;
  /** Milliseconds from the connection being established to the server closing it (or to giving up). */
  closedAfterMs: number;
  error?: string;
}

/**
 * Parses consecutive HTTP/1.1 responses from raw bytes: status line, headers, and a body framed by
 * Content-Length (our server never chunks). `headRequests` says which responses answer a HEAD
 * request and so carry no body.
 */
export function parseResponses(bytes: Buffer, headRequests = 0): { responses: RawResponse[]; rest: Buffer } {
  const responses: RawResponse[] = [];
  let offset = 0;
  for (;;) {
    const end = bytes.indexOf('\r\n\r\n', offset, 'latin1');
    if (end < 0) break;
    const lines = bytes.subarray(offset, end).toString('latin1').split('\r\n');
    const match = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '');
    if (!match) break;
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    }
    const length = responses.length < headRequests ? 0 : Number(headers['content-length'] ?? 0);
    if (bytes.length < end + 4 + length) break;
    responses.push({ status: Number(match[1]), headers, body: bytes.subarray(end + 4, end + 4 + length) });
    offset = end + 4 + length;
  }
  return { responses, rest: bytes.subarray(offset) };
}

export interface ExchangeOptions {
  /** Give up waiting for the server to close after this long. @defaultValue 10000 */
  timeoutMs?: number;
  /** Write the request in these pieces, one per event-loop turn (or `pieceDelayMs` apart), instead of at once. */
  pieces?: Buffer[];
  /** Wait this long between two pieces: a slow sender. @defaultValue 0 (the next event-loop turn) */
  pieceDelayMs?: number;
  headRequests?: number;
  host?: string;
  /**
   * Stop waiting once at least one whole response has arrived and nothing more for this long, instead
   * of waiting for the server to close a kept-alive connection. @defaultValue undefined (wait for the close)
   */
  settleMs?: number;
}

/**
 * Sends raw bytes on a fresh connection and collects everything the server answers until it closes
 * the connection. The client never closes first (a half-close would tell Node to end the exchange).
 */
export function exchange(port: number, request: Buffer, opts: ExchangeOptions = {}): Promise<Exchange> {
  const { timeoutMs = 10_000, host = '127.0.0.1' } = opts;
  return new Promise((resolve) => {
    let started = Date.now();
    const chunks: Buffer[] = [];
    let error: string | undefined;
    let settled = false;
    const socket: Socket = connect({ port, host });
    const done = (closedByServer: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(settle);
      socket.destroy();
      const { responses, rest } = parseResponses(Buffer.concat(chunks), opts.headRequests);
      resolve({ responses, rest, closedByServer, closedAfterMs: Date.now() - started, ...(error ? { error } : {}) });
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    let settle: NodeJS.Timeout | undefined;
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      if (opts.settleMs === undefined) return;
      clearTimeout(settle);
      if (parseResponses(Buffer.concat(chunks), opts.headRequests).responses.length > 0)
        settle = setTimeout(() => done(false), opts.settleMs);
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      error = err.code ?? err.message; // a reset after the answer, or a write into a closed connection
    });
    socket.on('close', () => done(true));
    socket.on('connect', () => {
      started = Date.now();
      const pieces = opts.pieces ?? [request];
      const writeNext = (i: number) => {
        if (i >= pieces.length || socket.destroyed) return;
        socket.write(pieces[i] as Buffer);
        if (opts.pieceDelayMs) setTimeout(() => writeNext(i + 1), opts.pieceDelayMs);
        else setImmediate(() => writeNext(i + 1));
      };
      writeNext(0);
    });
  });
}

/** A request as raw bytes from its parts; `headers` is a list so names may repeat and keep their case. */
export function rawRequest(
  method: string,
  target: string,
  headers: [string, string][],
  body: Buffer = Buffer.alloc(0),
  version = 'HTTP/1.1',
): Buffer {
  const head = `${method} ${target} ${version}\r\n${headers.map(([n, v]) => `${n}: ${v}\r\n`).join('')}\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}
