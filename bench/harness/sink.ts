/**
 * The local target that deliveries go to, run as its own process (forked by sink-control.ts). It
 * answers 200 at once and records when each event first arrived, so the harness can time a drain and
 * the end-to-end latency. An event is known by the `request_id` inside the platform body the
 * harness generated (unique per notification, and independent of how the service derives event
 * ids), else by its `webhook-id` header; at a path other than `/hook` (one of several targets), by
 * the path and that id, so each target's delivery counts. Commands and answers go over IPC.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SinkCommand, SinkReply, SinkStats } from './sink-protocol';

const arrivals = new Map<string, number>();
let received = 0;
let firstAt = 0;
let lastAt = 0;

const REQUEST_ID = /"request_id":"([^"]+)"/;

const server = createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (chunk: string) => {
    if (body.length < 65_536) body += chunk;
  });
  req.on('end', () => {
    // The sink has an event once all of its body arrived.
    const at = performance.timeOrigin + performance.now();
    received++;
    const header = req.headers['webhook-id'];
    const found = REQUEST_ID.exec(body)?.[1] ?? (typeof header === 'string' ? header : undefined);
    const id = found === undefined || req.url === '/hook' ? found : `${req.url ?? ''} ${found}`;
    if (id !== undefined && !arrivals.has(id)) {
      arrivals.set(id, at);
      if (firstAt === 0) firstAt = at;
      lastAt = at;
    }
    res.writeHead(200, { 'content-length': '0' });
    res.end();
  });
});
server.keepAliveTimeout = 30_000;

function stats(): SinkStats {
  return { received, unique: arrivals.size, firstAtMs: firstAt, lastAtMs: lastAt };
}

process.on('message', (msg: SinkCommand) => {
  let reply: SinkReply;
  if (msg.command === 'reset') {
    arrivals.clear();
    received = 0;
    firstAt = 0;
    lastAt = 0;
    reply = { type: 'reply', seq: msg.seq, stats: stats() };
  } else if (msg.command === 'arrivals') {
    reply = { type: 'reply', seq: msg.seq, stats: stats(), arrivals: [...arrivals] };
  } else {
    reply = { type: 'reply', seq: msg.seq, stats: stats() };
  }
  process.send?.(reply);
});

process.on('disconnect', () => process.exit(0));

server.listen(0, '127.0.0.1', () => {
  process.send?.({ type: 'ready', port: (server.address() as AddressInfo).port });
});
