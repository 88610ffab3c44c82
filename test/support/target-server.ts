import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';

export interface ReceivedRequest {
  at: number;
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The status the target answered (undefined while hanging or before it answers). */
  answered?: number;
  /** When it answered. */
  answeredAt?: number;
}

/** What the target does with the n-th request (0-based): answer a status, or hang. */
export type Behaviour = (
  n: number,
  req: ReceivedRequest,
) => { status: number; headers?: Record<string, string>; delayMs?: number; body?: string } | 'hang';

/**
 * A real local HTTP server standing in for one of the merchant's systems; it records every request to
 * its own path. Its path is unique (`/hook/<random>`): the port is an ephemeral one the OS may have
 * given another test moments before, whose late requests (a closed target's retries, a slow client's
 * bytes) land here; they are answered 404 and kept apart in `strays`, not taken for deliveries.
 */
export class TargetServer {
  readonly requests: ReceivedRequest[] = [];
  readonly strays: ReceivedRequest[] = [];
  private readonly hookPath = `/hook/${randomBytes(6).toString('hex')}`;
  inFlight = 0;
  maxInFlight = 0;
  private readonly hanging = new Set<ServerResponse>();
  private constructor(
    private readonly server: Server,
    public behaviour: Behaviour,
  ) {}

  static async start(behaviour: Behaviour = () => ({ status: 200 })): Promise<TargetServer> {
    let target: TargetServer | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () =>
        target!.handle({ at: Date.now(), path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) }, res),
      );
    });
    target = new TargetServer(server, behaviour);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    return target;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${this.hookPath}`;
  }

  private handle(req: ReceivedRequest, res: ServerResponse): void {
    if (req.path.split('?')[0] !== this.hookPath) {
      this.strays.push(req);
      res.writeHead(404).end();
      return;
    }
    const n = this.requests.length;
    this.requests.push(req);
    const action = this.behaviour(n, req);
    if (action === 'hang') {
      this.hanging.add(res);
      return;
    }
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    setTimeout(() => {
      this.inFlight--;
      req.answered = action.status;
      req.answeredAt = Date.now();
      res.writeHead(action.status, { 'content-type': 'text/plain', ...action.headers });
      res.end(action.body ?? `status ${action.status}`);
    }, action.delayMs ?? 0);
  }

  /** Requests answered 2xx so far. */
  successes(): ReceivedRequest[] {
    return this.requests.filter((r) => r.answered !== undefined && r.answered >= 200 && r.answered < 300);
  }

  async waitFor(predicate: () => boolean, timeoutMs = 10000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline)
        throw new Error(`target: condition not met within ${timeoutMs} ms (${this.requests.length} requests)`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
