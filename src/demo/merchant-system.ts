import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface MerchantSystem {
  url: string;
  /** Requests answered 2xx. */
  received: () => number;
  /** Every request, refused ones included. */
  requests: () => number;
  server: Server;
}

/**
 * A stand-in for one of the merchant's own systems: prints each forwarded event it receives. `refuse`
 * decides, per request (its event type, `webhook-id` and how many requests of that id came before),
 * whether to answer 503 instead, so the demo can show a retry and a dead letter.
 */
export async function startMerchantSystem(
  say: (line: string) => void,
  name = 'merchant system',
  refuse: (type: string, webhookId: string, seenBefore: number) => boolean = () => false,
): Promise<MerchantSystem> {
  let count = 0;
  let total = 0;
  const seen = new Map<string, number>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      total++;
      const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type?: string };
      const id = String(req.headers['webhook-id']);
      const before = seen.get(id) ?? 0;
      seen.set(id, before + 1);
      if (refuse(String(event.type), id, before)) {
        say(`${name} refused  ${String(event.type).padEnd(26)} webhook-id ${id} (503, attempt ${before + 1})`);
        res.writeHead(503, { 'content-type': 'text/plain' }).end('ledger is busy (the demo refuses this attempt)');
        return;
      }
      count++;
      say(
        `${name} received ${String(event.type).padEnd(26)} webhook-id ${id} (signed: ` +
          `${req.headers['webhook-signature'] ? 'yes' : 'no'})`,
      );
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`,
    received: () => count,
    requests: () => total,
    server,
  };
}
