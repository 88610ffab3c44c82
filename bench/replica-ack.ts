/**
 * `npm run bench:replica-ack`: what REDIS_MIN_REPLICAS_ACK costs. Starts a master and one replica on
 * this machine, the real receiver (in this process) on each setting in turn, and sends presigned
 * notifications from a fixed number of concurrent senders, timing each acknowledgement. Rounds
 * alternate 0 and 1 so a noisy neighbour hurts both; the best round of each counts.
 * Flags: --requests=N (per round, default 3000) --rounds=N (default 3) --concurrency=1,16.
 */
import { createPrivateKey } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { request } from 'undici';
import { loadEnvironments } from '../src/config/keys';
import { loadConfig } from '../src/config/load';
import { RedisServer } from '../src/demo/redis-server';
import { createLogger } from '../src/logging/logger';
import { createMetrics } from '../src/monitoring/metrics';
import { createPipeline, pipelineOptions } from '../src/pipeline/pipeline';
import { startReceiver } from '../src/receiver';
import { createRedisConnector } from '../src/redis/connect';
import { generateTestKeyPair } from '../src/signing/keypair';
import { flagsToEnv } from './harness/options';
import { presign, type PresignedRequest } from './harness/presign';

interface Round {
  ack: number;
  concurrency: number;
  p50Ms: number;
  p99Ms: number;
  perSec: number;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

async function round(
  redisUrl: string,
  keys: ReturnType<typeof generateTestKeyPair>,
  ack: number,
  concurrency: number,
  requests: readonly PresignedRequest[],
): Promise<Round> {
  const config = loadConfig({
    REDIS_URL: redisUrl,
    PLATFORM_PUBLIC_KEYS: keys.publicKeyBase64,
    REDIS_MIN_REPLICAS_ACK: String(ack),
    QUEUE_PREFIX: `ack${ack}c${concurrency}${Date.now()}`,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'error',
  });
  const connection = createRedisConnector(config).open('producer');
  const pipeline = createPipeline(connection, pipelineOptions(config));
  const receiver = await startReceiver({
    config,
    environments: loadEnvironments(config),
    logger: createLogger('error'),
    metrics: createMetrics(undefined, false),
    pipeline,
  });
  const base = `http://127.0.0.1:${receiver.port}`;
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  try {
    const sender = async () => {
      while (next < requests.length) {
        const r = requests[next++]!;
        const t0 = performance.now();
        const res = await request(`${base}${r.path}`, { method: 'POST', headers: r.headers, body: r.body });
        await res.body.dump();
        if (res.statusCode !== 200) throw new Error(`answered ${res.statusCode} with REDIS_MIN_REPLICAS_ACK=${ack}`);
        latencies.push(performance.now() - t0);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, sender));
  } finally {
    await receiver.close();
    await pipeline.close();
    connection.disconnect();
  }
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const round2 = (n: number) => Math.round(n * 100) / 100;
  return {
    ack,
    concurrency,
    p50Ms: round2(percentile(latencies, 50)),
    p99Ms: round2(percentile(latencies, 99)),
    perSec: Math.round(requests.length / seconds),
  };
}

async function main(): Promise<void> {
  const flags = flagsToEnv(process.argv.slice(2));
  const requestsPerRound = Number(flags.BENCH_REQUESTS ?? 3000);
  const rounds = Number(flags.BENCH_ROUNDS ?? 3);
  const concurrencies = (flags.BENCH_CONCURRENCY ?? '1,16').split(',').map(Number);
  const master = await RedisServer.start();
  // The replica's full sync writes an RDB file: into a temp dir of its own.
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-replica-'));
  const replica = await RedisServer.start({ args: ['--replicaof', '127.0.0.1', String(master.port), '--dir', dir] });
  const keys = generateTestKeyPair();
  const privateKey = createPrivateKey(keys.privateKeyPem);
  const results: Round[] = [];
  try {
    for (const concurrency of concurrencies) {
      for (let i = 0; i < rounds; i++) {
        for (const ack of [0, 1]) {
          const requests = await presign(privateKey, requestsPerRound);
          const r = await round(master.url, keys, ack, concurrency, requests);
          process.stderr.write(`round ${i + 1}: ${JSON.stringify(r)}\n`);
          results.push(r);
        }
      }
    }
  } finally {
    await replica.stop();
    await master.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`| concurrency | REDIS_MIN_REPLICAS_ACK | ack p50 (ms) | ack p99 (ms) | acks/s |`);
  console.log(`|---|---|---|---|---|`);
  for (const concurrency of concurrencies) {
    for (const ack of [0, 1]) {
      const mine = results.filter((r) => r.ack === ack && r.concurrency === concurrency);
      const best = mine.reduce((a, b) => (b.p50Ms < a.p50Ms ? b : a));
      console.log(`| ${concurrency} | ${ack} | ${best.p50Ms} | ${best.p99Ms} | ${best.perSec} |`);
    }
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    process.stderr.write(`${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);
