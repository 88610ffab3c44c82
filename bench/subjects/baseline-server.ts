/**
 * The lean ingest baselines: a bare node:http server (or, with BASELINE_HTTP=express, the same
 * handler inside one Express 5 middleware) doing only the irreducible work of a receiver —
 * read the body, verify the RSA signature and the timestamp window, claim the nonce and store the
 * job (one BullMQ add with de-duplication on a shared ioredis connection), answer. No express, helmet,
 * logging, metrics or schemas. Forked by subjects.ts; with SINK_URL it also runs the raw worker
 * in-process, the counterpart of the service's ROLE=all.
 */
import { createPublicKey, verify } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Express, type Request, type Response } from 'express';
import { Redis } from 'ioredis';
import { keyPrefix } from '../../src/model/names';
import { createBaselineProducer } from './baseline-producer';
import { startRawWorker, type RunningRawWorker } from './raw-worker';
import { serviceDefaults } from './service-defaults';

const SUCCESS = Buffer.from('{"ret_code":"000000","ret_msg":"Success"}');
const LF = Buffer.from('\n');

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
}

async function main(): Promise<void> {
  const redisUrl = required('REDIS_URL');
  // The service's key layout (hash-tagged prefix), so the harness reads both subjects' queues alike.
  const prefix = keyPrefix(required('QUEUE_PREFIX'));
  const key = createPublicKey({
    key: Buffer.from(readFileSync(required('PUBLIC_KEY_FILE'), 'utf8'), 'base64'),
    format: 'der',
    type: 'spki',
  });
  const defaults = serviceDefaults();
  const toleranceMs = defaults.timestampToleranceMs;

  // AUTO_PIPELINING (an experiment, BENCH_BASELINE_AUTOPIPELINE): one socket write per tick, not per command.
  const connection = new Redis(redisUrl, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    enableAutoPipelining: process.env.AUTO_PIPELINING === '1',
  });
  await new Promise<void>((resolve, reject) => {
    connection.once('ready', resolve);
    connection.once('error', reject);
  });
  const producer = createBaselineProducer(connection, prefix);

  const answer = (res: ServerResponse, status: number, body: Buffer | string) => {
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };

  const handle = async (
    req: IncomingMessage,
    res: ServerResponse,
    target: string,
    body: Buffer,
    receivedAtMs: number,
  ) => {
    const eventType = req.method === 'POST' ? producer.typeOf(target) : undefined;
    if (!eventType) return answer(res, 404, '{}');
    const timestamp = req.headers['x-svc-timestamp'];
    const nonce = req.headers['x-svc-nonce'];
    const sign = req.headers['x-svc-sign'];
    if (typeof timestamp !== 'string' || typeof nonce !== 'string' || typeof sign !== 'string')
      return answer(res, 401, '{}');
    if (Math.abs(Date.now() - Number(timestamp)) > toleranceMs) return answer(res, 401, '{}');
    const signed = Buffer.concat([Buffer.from(`POST\n${target}\n${timestamp}\n${nonce}\n`), body, LF]);
    if (!verify('sha256', signed, key, Buffer.from(decodeURIComponent(sign), 'base64'))) return answer(res, 401, '{}');

    await producer.add({
      eventType,
      path: target,
      body,
      timestamp: Number(timestamp),
      nonce,
      signatureHeaders: { 'x-svc-timestamp': timestamp, 'x-svc-nonce': nonce, 'x-svc-sign': sign },
      contentType: req.headers['content-type'],
      receivedAtMs,
    });
    answer(res, 200, SUCCESS);
  };

  const serve = (req: IncomingMessage, res: ServerResponse, target: string) => {
    const receivedAtMs = Date.now();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      handle(req, res, target, chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks), receivedAtMs).catch(
        () => answer(res, 503, '{}'),
      );
    });
  };
  // BASELINE_HTTP=express: the same handler inside one app.use on Express 5 (body read by hand, no
  // parser, no other middleware), the yardstick for what our own features cost on top of Express.
  const server =
    process.env.BASELINE_HTTP === 'express'
      ? createServer(expressApp(serve))
      : createServer((req, res) => serve(req, res, req.url ?? ''));
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  let worker: RunningRawWorker | undefined;
  const sinkUrl = process.env.SINK_URL;
  if (sinkUrl) worker = startRawWorker({ redisUrl, prefix, sinkUrl, concurrency: Number(required('RAW_CONCURRENCY')) });

  process.send?.({ type: 'ready', port: (server.address() as AddressInfo).port });
  process.on('SIGTERM', () => {
    server.close();
    server.closeIdleConnections();
    Promise.all([worker?.close(), producer.close()])
      .then(() => connection.disconnect())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  });
}

function expressApp(serve: (req: IncomingMessage, res: ServerResponse, target: string) => void): Express {
  const app = express();
  app.use((req: Request, res: Response) => serve(req, res, req.originalUrl));
  return app;
}

main().catch((err: Error) => {
  process.stderr.write(`baseline server failed: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
