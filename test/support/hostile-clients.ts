import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { FakePlatform } from './platform';

export interface Tricklers {
  /** Connections opened so far, reopenings included. */
  readonly opened: () => number;
  /** Connections open right now. */
  readonly open: () => number;
  stop(): Promise<void>;
}

/**
 * `count` connections from `localAddress` that send a request line, then their headers a few bytes
 * a second, never finishing them; each one the server cuts (or refuses) is reopened after
 * `reopenMs`, so the sender keeps `count` in play for as long as it runs.
 */
export function trickleHeaders(
  port: number,
  count: number,
  opts: { host?: string; localAddress?: string; reopenMs?: number; target?: string } = {},
): Tricklers {
  const host = opts.host ?? '127.0.0.1';
  const reopenMs = opts.reopenMs ?? 250;
  const sockets = new Set<Socket>();
  let stopped = false;
  let opened = 0;
  const timers = new Set<NodeJS.Timeout>();

  // Once stopped, nothing is scheduled: the sockets destroyed by stop() close afterwards, and a
  // reopening timer armed then would keep the test process alive after its last test.
  const later = (fn: () => void, ms: number) => {
    if (stopped) return;
    const t = setTimeout(() => {
      timers.delete(t);
      if (!stopped) fn();
    }, ms);
    timers.add(t);
  };

  function one(): void {
    opened++;
    const socket = connect({ port, host, ...(opts.localAddress ? { localAddress: opts.localAddress } : {}) });
    sockets.add(socket);
    let tick: NodeJS.Timeout | undefined;
    socket.on('connect', () => {
      socket.write(`POST ${opts.target ?? '/api/v2/payment/notify'} HTTP/1.1\r\nHost: x\r\n`);
      let n = 0;
      tick = setInterval(() => socket.write(n++ % 2 === 0 ? 'X-Slow-' : `${n}: y\r\n`), 1000);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearInterval(tick);
      sockets.delete(socket);
      // Jittered, so reopenings do not arrive in waves.
      later(one, reopenMs / 2 + Math.random() * reopenMs);
    });
  }

  for (let i = 0; i < count; i++) later(one, (i % 100) * 5);
  return {
    opened: () => opened,
    open: () => sockets.size,
    async stop() {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      for (const s of sockets) s.destroy();
      await new Promise((r) => setTimeout(r, 50));
    },
  };
}

export interface Sent {
  status: number;
  ms: number;
  retryAfter?: string;
}

/** One signed notification on its own connection from `localAddress`; the status and how long the answer took (status 0: no answer). */
export function sendGenuine(
  platform: FakePlatform,
  port: number,
  opts: { localAddress?: string; host?: string; timeoutMs?: number } = {},
): Promise<Sent> {
  const n = platform.signed('payment.result');
  const started = performance.now();
  return new Promise((resolve) => {
    const req = request(
      {
        host: opts.host ?? '127.0.0.1',
        port,
        method: 'POST',
        path: n.target,
        agent: false,
        headers: { ...n.headers, connection: 'close', 'content-length': String(n.body.length) },
        ...(opts.localAddress ? { localAddress: opts.localAddress } : {}),
        timeout: opts.timeoutMs ?? 10_000,
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            ms: performance.now() - started,
            retryAfter: res.headers['retry-after'],
          }),
        );
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve({ status: 0, ms: performance.now() - started }));
    req.end(n.body);
  });
}

/** `count` genuine notifications, one every `everyMs`, each on its own connection. */
export async function sendEvery(
  platform: FakePlatform,
  port: number,
  count: number,
  everyMs: number,
  opts: { localAddress?: string } = {},
): Promise<Sent[]> {
  const sends: Promise<Sent>[] = [];
  for (let i = 0; i < count; i++) {
    sends.push(sendGenuine(platform, port, opts));
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return Promise.all(sends);
}

export function describeSends(sent: Sent[]): string {
  const ms = sent.map((s) => s.ms).sort((a, b) => a - b);
  const statuses = sent.reduce<Record<number, number>>(
    (acc, s) => ({ ...acc, [s.status]: (acc[s.status] ?? 0) + 1 }),
    {},
  );
  return `statuses ${JSON.stringify(statuses)}, latency median ${ms[Math.floor(ms.length / 2)]!.toFixed(0)} ms, max ${ms.at(-1)!.toFixed(0)} ms`;
}
