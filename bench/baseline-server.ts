/**
 * The lean ingest baseline: a bare node:http server doing only the irreducible work of a receiver —
 * read the body, verify the RSA signature and the timestamp window, claim the nonce and store the
 * job (one BullMQ add with de-duplication on a shared ioredis connection), answer. No express, helmet,
 * logging, metrics or schemas. Forked by subjects.ts; with SINK_URL it also runs the raw worker
 * in-process, the counterpart of the service's ROLE=all.
 */
import { createHash, createPublicKey, randomBytes, verify } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { EVENT_TABLE, type EventType } from '../src/events/table';
import { eventJobOptions } from '../src/pipeline/job-options';
import { eventQueueName } from '../src/pipeline/names';
import { buildEventJob } from './event-job';
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
  const prefix = required('QUEUE_PREFIX');
  const key = createPublicKey({ key: Buffer.from(readFileSync(required('PUBLIC_KEY_FILE'), 'utf8'), 'base64'), format: 'der', type: 'spki' });
  const defaults = serviceDefaults();
  const toleranceMs = defaults.timestampToleranceMs;

  // AUTO_PIPELINING (an experiment, BENCH_BASELINE_AUTOPIPELINE): one socket write per tick, not per command.
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: false, enableAutoPipelining: process.env.AUTO_PIPELINING === '1' });
  await new Promise<void>((resolve, reject) => {
    connection.once('ready', resolve);
    connection.once('error', reject);
  });
  // The job options (attempts, backoff, retention) are the service's own (a pure function of its
  // configuration), so both store the same thing; the queues and adds below are the baseline's own.
  const defaultJobOptions = eventJobOptions(defaults.retention);
  const queues = new Map<string, { type: EventType; queue: Queue }>();
  for (const e of EVENT_TABLE) {
    queues.set(e.path, { type: e.type, queue: new Queue(eventQueueName(e.type), { connection, prefix, defaultJobOptions }) });
  }

  const answer = (res: ServerResponse, status: number, body: Buffer | string) => {
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, body: Buffer, receivedAtMs: number) => {
    const route = req.method === 'POST' && req.url ? queues.get(req.url) : undefined;
    if (!route || !req.url) return answer(res, 404, '{}');
    const timestamp = req.headers['x-svc-timestamp'];
    const nonce = req.headers['x-svc-nonce'];
    const sign = req.headers['x-svc-sign'];
    if (typeof timestamp !== 'string' || typeof nonce !== 'string' || typeof sign !== 'string') return answer(res, 401, '{}');
    if (Math.abs(Date.now() - Number(timestamp)) > toleranceMs) return answer(res, 401, '{}');
    const signed = Buffer.concat([Buffer.from(`POST\n${req.url}\n${timestamp}\n${nonce}\n`), body, LF]);
    if (!verify('sha256', signed, key, Buffer.from(decodeURIComponent(sign), 'base64'))) return answer(res, 401, '{}');

    const job = buildEventJob({
      eventType: route.type,
      path: req.url,
      body,
      timestamp: Number(timestamp),
      nonce,
      signatureHeaders: { 'x-svc-timestamp': timestamp, 'x-svc-nonce': nonce, 'x-svc-sign': sign },
      contentType: req.headers['content-type'],
      receivedAtMs,
    });
    // The receiver's job id form: a tag of the nonce (which claims it) and a random part.
    const jobId = `${createHash('sha256').update(nonce).digest('hex').slice(0, 16)}-${randomBytes(6).toString('hex')}`;
    await route.queue.add(route.type, job, { jobId, deduplication: { id: job.eventId, ttl: defaults.dedupWindowMs } });
    answer(res, 200, SUCCESS);
  };

  const server = createServer((req, res) => {
    const receivedAtMs = Date.now();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      handle(req, res, chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks), receivedAtMs).catch(() => answer(res, 503, '{}'));
    });
  });
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  let worker: RunningRawWorker | undefined;
  const sinkUrl = process.env.SINK_URL;
  if (sinkUrl) worker = startRawWorker({ redisUrl, prefix, sinkUrl, concurrency: Number(required('RAW_CONCURRENCY')) });

  process.send?.({ type: 'ready', port: (server.address() as AddressInfo).port });
  process.on('SIGTERM', () => {
    server.close();
    server.closeIdleConnections();
    Promise.all([worker?.close(), ...[...queues.values()].map((q) => q.queue.close())])
      .then(() => connection.disconnect())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  });
}

main().catch((err: Error) => {
  process.stderr.write(`baseline server failed: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
