import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A stand-in for the merchant's own business system: prints each forwarded event it receives. */
export async function startMerchantSystem(say: (line: string) => void): Promise<{ url: string; received: () => number; server: Server }> {
  let count = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      count++;
      const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type?: string };
      say(`merchant system received ${String(event.type).padEnd(26)} webhook-id ${String(req.headers['webhook-id'])} (signed: ${req.headers['webhook-signature'] ? 'yes' : 'no'})`);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`, received: () => count, server };
}
