import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { formatSummary, summarise } from './summary';
import { verifyForwarded } from './verify';

export interface ListenOptions {
  /** 0 picks a free port. @defaultValue 4000 */
  port: number;
  /** @defaultValue 127.0.0.1 */
  host: string;
  /** The target's secrets (`whsec_…`); a request verifying under any of them is accepted. */
  secrets: readonly string[];
  /** Pass each verified event on to this URL and print its answer. */
  forwardTo?: string;
  /** Print the raw event rather than a readable line. */
  json: boolean;
  /** @defaultValue 10000 */
  forwardTimeoutMs?: number;
}

const BODY_LIMIT = 5 * 1024 * 1024;
const EXCERPT = 200;
/** Hop-by-hop and length headers are the forwarding client's own business. */
const NOT_FORWARDED = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive']);

/**
 * A local endpoint for a merchant developer, in the spirit of `stripe listen`: POST on any path,
 * checked like the merchant's own system would check it, one line per event, optionally passed on
 * to the developer's local handler (whose status is then the answer, so retries can be tried out).
 */
export async function startListener(
  opts: ListenOptions,
  out: (line: string) => void,
): Promise<{ port: number; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    handle(req, res).catch((err: Error) => {
      out(`${new Date().toISOString()}  error  ${err.message}`);
      if (!res.headersSent) reply(res, 500, { error: 'internal', message: err.message });
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const at = new Date();
    if (req.method !== 'POST')
      return reply(res, 405, { error: 'method_not_allowed', message: 'POST only' }, { allow: 'POST' });
    const body = await readBody(req);
    if (body === undefined) return reply(res, 413, { error: 'too_large', message: `body over ${BODY_LIMIT} bytes` });
    const verdict = verifyForwarded(opts.secrets, body, req.headers);
    const webhookId = String(req.headers['webhook-id'] ?? '');
    if (!verdict.ok) {
      out(
        opts.json
          ? JSON.stringify({ rejected: true, status: 401, reason: verdict.reason, webhookId, path: req.url })
          : `${at.toISOString()}  rejected 401  ${req.method} ${req.url}  webhook-id ${webhookId || '(none)'}  ` +
              `reason: ${verdict.reason}`,
      );
      return reply(res, 401, { error: 'invalid_signature', message: verdict.reason });
    }
    out(opts.json ? body.toString('utf8') : formatSummary(at, summarise(body, req.headers)));
    if (!opts.forwardTo) return reply(res, 200, { received: true });

    const started = performance.now();
    try {
      const answer = await fetch(opts.forwardTo, {
        method: 'POST',
        headers: Object.fromEntries(Object.entries(req.headers).filter(([name]) => !NOT_FORWARDED.has(name))) as Record<
          string,
          string
        >,
        body,
        signal: AbortSignal.timeout(opts.forwardTimeoutMs ?? 10000),
      });
      const text = await answer.text();
      const ms = Math.round(performance.now() - started);
      out(
        `  -> ${answer.status} from ${opts.forwardTo} in ` +
          `${ms} ms${text ? `: ${text.slice(0, EXCERPT).replace(/\s+/g, ' ')}` : ''}`,
      );
      res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'text/plain' });
      res.end(text);
    } catch (err) {
      const e = err as Error & { cause?: { code?: string } };
      const reason =
        e.name === 'TimeoutError'
          ? `no answer within ${opts.forwardTimeoutMs ?? 10000} ms`
          : (e.cause?.code ?? e.message);
      out(`  -> not delivered to ${opts.forwardTo}: ${reason}`);
      reply(res, 502, { error: 'forward_failed', message: `${opts.forwardTo}: ${reason}` });
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function reply(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/** The body, or undefined when it is over the limit. */
function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= BODY_LIMIT) chunks.push(chunk);
    });
    req.on('end', () => resolve(size > BODY_LIMIT ? undefined : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
