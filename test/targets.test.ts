import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Agent } from 'undici';
import { attemptDelivery } from '../src/forwarding/attempt';
import { PermanentDeliveryError, TransientDeliveryError } from '../src/forwarding/delivery-errors';
import { targetSchema, type Target } from '../src/model/target-schema';
import { buildForwarding } from './support/forwarding-harness';
import { FakePlatform } from './support/platform';

const TIMEOUT_MS = 500;
/** Slack for a loaded 2-core machine; undici's fast timers also tick at about 500 ms. */
const SLACK_MS = 2000;

function problems(input: Record<string, unknown>): string[] {
  const result = targetSchema.safeParse({ name: 'ledger', events: ['*'], ...input });
  return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

describe('target configuration', () => {
  it.each([
    'http://127.0.0.1:9000/hook',
    'http://127.8.9.10/hook',
    'http://localhost:9000/hook',
    'http://[::1]:9000/hook',
    'https://ledger.example/hook',
  ])('accepts %s', (url) => expect(problems({ url })).toEqual([]));

  it.each([
    'http://ledger.example/hook',
    'http://10.0.0.5/hook',
    'http://128.0.0.1/hook',
    'http://[::2]/hook',
    'http://localhost.example/hook',
  ])('refuses plain http to another host, %s, naming the target', (url) => {
    expect(problems({ url })).toEqual([
      'url: target "ledger": http:// is allowed only to this machine (localhost, 127.0.0.0/8, ::1); use https://, or set allowInsecure: true',
    ]);
  });

  it('accepts plain http to another host when the target says allowInsecure: true', () => {
    expect(problems({ url: 'http://ledger.internal/hook', allowInsecure: true })).toEqual([]);
  });

  it('refuses a secret of fewer than 24 bytes, and accepts 24', () => {
    const short = `whsec_${Buffer.alloc(23, 7).toString('base64')}`;
    expect(problems({ url: 'https://l.example/', secret: short })).toEqual([
      'secret: target "ledger": a secret carries 23 bytes; at least 24 (whsec_ and the Base64 of 24 or more random bytes)',
    ]);
    expect(problems({ url: 'https://l.example/', secret: `whsec_${Buffer.alloc(24, 7).toString('base64')}` })).toEqual(
      [],
    );
    expect(problems({ url: 'https://l.example/', secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' })).toEqual([]);
    expect(JSON.stringify(problems({ url: 'https://l.example/', secret: short }))).not.toContain(short.slice(6));
  });
});

describe('one delivery attempt', () => {
  let dispatcher: Agent;
  beforeEach(() => {
    dispatcher = new Agent({ connections: 2, keepAliveTimeout: 4000 });
  });
  afterEach(() => dispatcher.close());

  const target = (url: string): Target =>
    targetSchema.parse({ name: 'slow', url, events: ['*'], timeoutMs: TIMEOUT_MS });
  const outgoing = { headers: { 'content-type': 'application/json' }, body: Buffer.from('{}') };

  async function timed<T>(work: Promise<T>): Promise<{ ms: number; value?: T; error?: unknown }> {
    const started = Date.now();
    try {
      const value = await work;
      return { ms: Date.now() - started, value };
    } catch (error) {
      return { ms: Date.now() - started, error };
    }
  }

  async function httpServer(
    handler: (res: ServerResponse, closed: () => void) => void,
  ): Promise<{ server: Server; url: string; closes: number[] }> {
    const closes: number[] = [];
    const server = createHttpServer((req, res) => {
      req.resume();
      handler(res, () => closes.push(Date.now()));
      res.on('close', () => closes.push(Date.now()));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, closes };
  }

  async function stop(server: Server | TcpServer): Promise<void> {
    if ('closeAllConnections' in server) server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }

  it('ends by the target timeout when the answer body trickles one byte per 100 ms, freeing the slot', async () => {
    const timers: NodeJS.Timeout[] = [];
    const { server, url } = await httpServer((res) => {
      res.writeHead(503, { 'content-type': 'text/plain' });
      timers.push(setInterval(() => res.write('x'), 100));
    });
    // Long enough that the status line surely arrives first, even on a loaded machine.
    const timeoutMs = 1500;
    const result = await timed(attemptDelivery({ ...target(url), timeoutMs }, dispatcher, outgoing));
    timers.forEach(clearInterval);
    await stop(server);

    expect(result.ms).toBeGreaterThanOrEqual(timeoutMs - 50);
    expect(result.ms).toBeLessThan(timeoutMs + SLACK_MS);
    // The status arrived in time and stands; the excerpt is what trickled in before the deadline.
    expect(result.error).toBeInstanceOf(TransientDeliveryError);
    expect(result.error).toMatchObject({ targetStatus: 503, responseExcerpt: expect.stringMatching(/^x{1,20}$/) });
  });

  it('ends by the target timeout when the headers trickle one byte per 100 ms', async () => {
    const sockets: Socket[] = [];
    const timers: NodeJS.Timeout[] = [];
    const server = createTcpServer((socket) => {
      sockets.push(socket);
      socket.on('error', () => undefined);
      socket.once('data', () => {
        socket.write('HTTP/1.1 200 OK\r\nX-Slow: ');
        timers.push(setInterval(() => socket.write('y'), 100));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    const result = await timed(attemptDelivery(target(url), dispatcher, outgoing));
    timers.forEach(clearInterval);
    sockets.forEach((s) => s.destroy());
    await stop(server);

    expect(result.ms).toBeLessThan(TIMEOUT_MS + SLACK_MS);
    expect(result.error).toBeInstanceOf(TransientDeliveryError);
    expect((result.error as Error).message).toBe(`timeout after ${TIMEOUT_MS} ms`);
  });

  it('reads 512 bytes of an endless answer, then drops the connection instead of draining it', async () => {
    let written = 0;
    const timers: NodeJS.Timeout[] = [];
    const { server, url, closes } = await httpServer((res) => {
      res.writeHead(400, { 'content-type': 'text/plain' });
      const chunk = 'e'.repeat(16 * 1024);
      timers.push(
        setInterval(() => {
          res.write(chunk);
          written += chunk.length;
        }, 5),
      );
    });
    const slow = { ...target(url), timeoutMs: 5000 };
    const result = await timed(attemptDelivery(slow, dispatcher, outgoing));
    await new Promise((r) => setTimeout(r, 100));
    timers.forEach(clearInterval);
    await stop(server);

    expect(result.ms).toBeLessThan(3000); // neither read to the end (there is none) nor held until the 5 s deadline
    expect(result.error).toBeInstanceOf(PermanentDeliveryError);
    expect((result.error as PermanentDeliveryError).responseExcerpt).toBe('e'.repeat(512));
    expect(closes.length).toBeGreaterThanOrEqual(1); // the server saw the connection go
    expect(written).toBeLessThan(4 * 1024 * 1024);
  });

  it("when a request is forwarded, then it carries User-Agent platform-webhook-receiver/<package.json's version>, over a target's own", async () => {
    const seen: (string | undefined)[] = [];
    const { server, url } = await httpServer((res) => {
      seen.push(res.req.headers['user-agent']);
      res.writeHead(204).end();
    });
    const claimed = { ...outgoing, headers: { ...outgoing.headers, 'user-agent': 'curl/8' } };
    await attemptDelivery(target(url), dispatcher, claimed);
    await stop(server);
    const { version } = JSON.parse(readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')) as {
      version: string;
    };
    expect(seen).toEqual([`platform-webhook-receiver/${version}`]);
  });

  it('when a 2xx answer runs past 128 KiB, then it is delivered and its connection closed rather than drained', async () => {
    const timers: NodeJS.Timeout[] = [];
    const { server, url, closes } = await httpServer((res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const chunk = 'k'.repeat(16 * 1024);
      timers.push(setInterval(() => res.write(chunk), 5));
    });
    const result = await timed(attemptDelivery({ ...target(url), timeoutMs: 5000 }, dispatcher, outgoing));
    await new Promise((r) => setTimeout(r, 100));
    timers.forEach(clearInterval);
    await stop(server);

    expect(result.value).toMatchObject({ status: 200 });
    expect(result.ms).toBeLessThan(3000); // not held until the 5 s deadline
    expect(closes.length).toBeGreaterThanOrEqual(1);
  });

  it('when no connection frees up before the deadline, then the waiting attempt times out and is never sent', async () => {
    const oneConnection = new Agent({ connections: 1, keepAliveTimeout: 4000 });
    const sockets: Socket[] = [];
    let received = '';
    const server = createTcpServer((socket) => {
      sockets.push(socket);
      socket.on('error', () => undefined);
      socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1'))); // and never answers
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    // The holding attempt keeps the one connection well past the waiting one's deadline; when it times
    // out, its connection closes and undici opens another for the queued request, which is over by then.
    const holdingMs = TIMEOUT_MS * 4;
    const [holding, waiting] = await Promise.all([
      timed(attemptDelivery({ ...target(url), timeoutMs: holdingMs }, oneConnection, outgoing)),
      timed(attemptDelivery(target(url), oneConnection, outgoing)),
    ]);
    await new Promise((r) => setTimeout(r, 200));
    sockets.forEach((s) => s.destroy());
    await stop(server);
    await oneConnection.close();

    expect(waiting.ms).toBeLessThan(TIMEOUT_MS + SLACK_MS);
    expect((waiting.error as Error).message).toBe(`timeout after ${TIMEOUT_MS} ms`);
    expect(holding.ms).toBeGreaterThanOrEqual(holdingMs);
    expect((holding.error as Error).message).toBe(`timeout after ${holdingMs} ms`);
    expect(received.match(/POST \/hook/g)).toHaveLength(1);
  });

  it('keeps a short answer whole and succeeds on 2xx', async () => {
    const { server, url } = await httpServer((res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    });
    const result = await timed(attemptDelivery(target(url), dispatcher, outgoing));
    await stop(server);
    expect(result.value).toMatchObject({ status: 200 });
  });
});

describe('a delivery worker with one slot', () => {
  it('when the target trickles its first answer one byte per 100 ms, then the next delivery still goes out within the timeout', async () => {
    const arrivals: { at: number; body: string }[] = [];
    const timers: NodeJS.Timeout[] = [];
    const server = createHttpServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        arrivals.push({ at: Date.now(), body: Buffer.concat(chunks).toString() });
        res.writeHead(200, { 'content-type': 'text/plain' });
        if (arrivals.length === 1) timers.push(setInterval(() => res.write('.'), 100));
        else res.end('ok');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const platform = new FakePlatform();
    const f = buildForwarding(platform, [
      {
        name: 'slow',
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
        concurrency: 1,
        timeoutMs: TIMEOUT_MS,
        maxAttempts: 1,
      },
    ]);
    try {
      await platform
        .send(
          f.receiver.app,
          platform.signed('payment.result', { body: '{"type":"MERCH","data":{"request_id":"TRICKLE-1"}}' }),
        )
        .expect(200);
      const deadline = Date.now() + 5000;
      while (arrivals.length < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      await platform
        .send(
          f.receiver.app,
          platform.signed('payment.result', { body: '{"type":"MERCH","data":{"request_id":"TRICKLE-2"}}' }),
        )
        .expect(200);
      while (arrivals.length < 2 && Date.now() < deadline + 5000) await new Promise((r) => setTimeout(r, 20));

      expect(arrivals.map((a) => /TRICKLE-\d/.exec(a.body)?.[0])).toEqual(['TRICKLE-1', 'TRICKLE-2']);
      expect(arrivals[1]!.at - arrivals[0]!.at).toBeLessThan(TIMEOUT_MS + SLACK_MS);
    } finally {
      timers.forEach(clearInterval);
      await f.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
