import type { ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { request } from 'undici';
import { forkBench, freePort, sleep, spawnService, stopChild, waitForMessage } from '../harness/processes';

/** A process under test: the service, the lean baseline server, or the raw worker. */
export interface Subject {
  kind: 'service' | 'baseline';
  pid: number;
  /** Where notifications are sent; absent for a worker-only process. */
  url?: string;
  stop(): Promise<void>;
}

function pidOf(child: ChildProcess): number {
  if (child.pid === undefined) throw new Error('child process has no pid (failed to spawn)');
  return child.pid;
}

export interface ServiceStart {
  redisUrl: string;
  publicKeyFile: string;
  prefix: string;
  role: 'all' | 'receiver' | 'worker';
  /** CONFIG_FILE naming the sink as the one target. */
  configFile?: string;
  /** The service's JSON log lines go here; /dev/null by default (still formatted and written: logging stays on). */
  logFile?: string;
  cpuProfDir?: string;
  /** Experiments only (BENCH_SERVICE_ENV); applied last. */
  extraEnv?: Record<string, string>;
}

/** Starts `node dist/src/main.js` configured by environment, as in production, with info logging on. */
export async function startService(opts: ServiceStart): Promise<Subject> {
  const port = await freePort();
  const adminPort = await freePort();
  const env: Record<string, string> = {
    PORT: String(port),
    HOST: '127.0.0.1',
    REDIS_URL: opts.redisUrl,
    PLATFORM_PUBLIC_KEYS: `file:${opts.publicKeyFile}`,
    QUEUE_PREFIX: opts.prefix,
    LOG_LEVEL: 'info',
    ROLE: opts.role,
    ADMIN_PORT: String(adminPort),
    ADMIN_HOST: '127.0.0.1',
    // The load generator stands for the platform's many senders, all on 127.0.0.1: one address's share lifted.
    MAX_CONNECTIONS_PER_SOURCE: '4096',
    ...(opts.configFile ? { CONFIG_FILE: opts.configFile } : {}),
    ...opts.extraEnv,
  };
  const logFd = openSync(opts.logFile ?? '/dev/null', 'a');
  const nodeArgs = opts.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProfDir}`] : [];
  const child = spawnService(env, ['ignore', logFd, 'pipe'], nodeArgs);
  closeSync(logFd);
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-4000);
  });
  const url = `http://127.0.0.1:${port}`;
  if (opts.role !== 'worker') await waitForHealth(child, url, () => stderr);
  return {
    kind: 'service',
    pid: pidOf(child),
    url: opts.role === 'worker' ? undefined : url,
    stop: () => stopChild(child),
  };
}

async function waitForHealth(child: ChildProcess, url: string, stderr: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`service exited (${child.exitCode ?? child.signalCode}): ${stderr()}`);
    try {
      const res = await request(`${url}/healthz`);
      await res.body.dump();
      if (res.statusCode === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(50);
  }
  await stopChild(child);
  throw new Error(`service did not answer /healthz within 30 s: ${stderr()}`);
}

export interface BaselineStart {
  redisUrl: string;
  publicKeyFile: string;
  prefix: string;
  /** With a sink, the raw worker runs in the same process (the baseline of ROLE=all). */
  sinkUrl?: string;
  rawConcurrency: number;
  autoPipelining?: boolean;
  /** `express`: the same handler inside one `app.use` on Express 5. @defaultValue node */
  http?: 'node' | 'express';
}

export async function startBaselineServer(opts: BaselineStart): Promise<Subject> {
  const child = forkBench('subjects/baseline-server', [], {
    REDIS_URL: opts.redisUrl,
    PUBLIC_KEY_FILE: opts.publicKeyFile,
    QUEUE_PREFIX: opts.prefix,
    RAW_CONCURRENCY: String(opts.rawConcurrency),
    ...(opts.sinkUrl ? { SINK_URL: opts.sinkUrl } : {}),
    ...(opts.autoPipelining ? { AUTO_PIPELINING: '1' } : {}),
    ...(opts.http === 'express' ? { BASELINE_HTTP: 'express' } : {}),
  });
  const ready = await waitForMessage<{ type: 'ready'; port: number }>(child, 'ready', 30_000);
  return { kind: 'baseline', pid: pidOf(child), url: `http://127.0.0.1:${ready.port}`, stop: () => stopChild(child) };
}

export async function startRawWorkerProcess(opts: {
  redisUrl: string;
  prefix: string;
  sinkUrl: string;
  concurrency: number;
}): Promise<Subject> {
  const child = forkBench('subjects/raw-worker', [], {
    REDIS_URL: opts.redisUrl,
    QUEUE_PREFIX: opts.prefix,
    SINK_URL: opts.sinkUrl,
    RAW_CONCURRENCY: String(opts.concurrency),
  });
  await waitForMessage<{ type: 'ready' }>(child, 'ready', 30_000);
  return { kind: 'baseline', pid: pidOf(child), stop: () => stopChild(child) };
}

/**
 * A raw drainer into the merchant's side (raw-amqp-worker.ts, raw-pg-worker.ts: plain BullMQ workers
 * over the baseline's queues), with its own settings in `env`.
 */
export async function startRawDrainerProcess(
  script: 'subjects/raw-amqp-worker' | 'subjects/raw-pg-worker',
  opts: { redisUrl: string; prefix: string; concurrency: number; env: Record<string, string> },
): Promise<Subject> {
  const child = forkBench(script, [], {
    REDIS_URL: opts.redisUrl,
    QUEUE_PREFIX: opts.prefix,
    RAW_CONCURRENCY: String(opts.concurrency),
    ...opts.env,
  });
  await waitForMessage<{ type: 'ready' }>(child, 'ready', 30_000);
  return { kind: 'baseline', pid: pidOf(child), stop: () => stopChild(child) };
}
