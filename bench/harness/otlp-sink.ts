import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local OTLP/HTTP collector stand-in for the tracing phase: takes every POST (protobuf or JSON)
 * to /v1/traces, answers 200 at once and counts the exports and their bytes, so the service pays
 * for building, batching and sending its spans and nothing waits on a real collector.
 */
export class OtlpSink {
  exports = 0;
  bytes = 0;
  private constructor(private readonly server: Server) {}

  static async start(): Promise<OtlpSink> {
    let sink: OtlpSink | undefined;
    const server = createServer((req, res) => {
      req.on('data', (c: Buffer) => (sink!.bytes += c.length));
      req.on('end', () => {
        sink!.exports++;
        res
          .writeHead(req.url === '/v1/traces' ? 200 : 404, {
            'content-type': req.headers['content-type'] ?? 'application/x-protobuf',
          })
          .end();
      });
    });
    sink = new OtlpSink(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    return sink;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
