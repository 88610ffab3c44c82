/**
 * Instructions per accepted notification, counted by valgrind's callgrind: the service
 * (ROLE=receiver, every feature on) against the Express and node:http baselines, under the same
 * closed-loop load. Unlike a rate, an instruction count barely moves when a neighbour loads the
 * machine, so two builds can be compared on a shared machine. It counts user-space instructions of
 * the subject only (not the kernel's work for its syscalls, not Redis), and every subject runs about
 * 50x slower under valgrind, so answers batch differently than at full speed: a guide to where our
 * own code costs, not a throughput figure. GC work comes in whole collections, so it is reported
 * apart (a window of 1,500 requests holds a few); so are V8's compilers, still busy after a short
 * warm-up.
 *
 *   npm run build && node dist/bench/instructions.js [--subjects=service,express,node,script]
 *       [--baseline-script=../shared/perf/baseline-express.cjs] [--requests=1500] [--warmup=6000] [--service-env=K=V,...] [--node-flags='...'] [--mode=cpu]
 *
 * `--node-flags` replaces the service's V8 flags (default: those of `npm start`); `--mode=cpu`
 * measures CPU ms per request at full speed instead, without valgrind. IR_KEEP=1 keeps the dumps
 * for callgrind_annotate.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { keyPrefix } from '../src/model/names';
import { runLoad } from './harness/load';
import { presign } from './harness/presign';
import {
  baseEnv,
  benchModule,
  freePort,
  killAllChildren,
  PROJECT_ROOT,
  serviceModule,
  serviceNodeFlags,
  sleep,
  stopChild,
  waitForMessage,
} from './harness/processes';
import { jobTotals } from './harness/queues';
import { cpuMsOf } from './harness/cpu';
import { BenchRedis } from './harness/redis';
import { Workdir } from './harness/workdir';

/**
 * `script`: an outside baseline, `node <--baseline-script> PORT REDIS_URL PUBLIC_KEY_FILE` (as the
 * scripts of an outside yardstick take them), counted by the nonce keys it claims (`nonce:*`).
 */
type Kind = 'service' | 'express' | 'node' | 'script';

/** `--mode=cpu`: no valgrind; CPU ms (user + system, /proc) per accepted request at full speed instead. */
const CPU_MODE = process.argv.includes('--mode=cpu');

const VALGRIND = ['--tool=callgrind', '--instr-atstart=no', '--smc-check=all-non-file', '--error-limit=no'];

function argValue(name: string, fallback: string): string {
  const hit = process.argv.find((a) => a.startsWith(`--${name}=`));
  return hit ? hit.slice(name.length + 3) : fallback;
}

/**
 * valgrind names its control pipes after the USER and HOST variables of the process it runs, and
 * the service's HOST is its listen address: callgrind_control must be given the same two.
 */
/** `--service-env=K=V,K2=V2`: extra service environment, for experiments. */
function serviceEnv(): Record<string, string> {
  return Object.fromEntries(
    argValue('service-env', '')
      .split(',')
      .filter(Boolean)
      .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
  );
}

function callgrindControl(args: string[], subjectEnv: Record<string, string>): Promise<void> {
  const env = { ...process.env };
  delete env.USER;
  delete env.HOST;
  for (const name of ['USER', 'HOST']) if (subjectEnv[name] !== undefined) env[name] = subjectEnv[name];
  return new Promise((resolve, reject) => {
    const child = spawn('callgrind_control', args, { stdio: 'ignore', env });
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`callgrind_control ${args.join(' ')} exited ${code}`)),
    );
  });
}

async function waitForHealth(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`subject exited (${child.exitCode})`);
    try {
      const res = await fetch(`${url}/healthz`);
      await res.arrayBuffer();
      return;
    } catch {
      await sleep(250);
    }
  }
  throw new Error(`subject did not listen within 180 s at ${url}`);
}

async function start(
  kind: Kind,
  redis: BenchRedis,
  workdir: Workdir,
  prefix: string,
  outDir: string,
): Promise<{ child: ChildProcess; url: string; env: Record<string, string> }> {
  const port = await freePort();
  const vg = [...VALGRIND, `--callgrind-out-file=${path.join(outDir, 'callgrind.out')}`];
  const common = { REDIS_URL: redis.url, QUEUE_PREFIX: prefix };
  if (kind === 'script') {
    // The script resolves express, bullmq and ioredis from this project's node_modules.
    const env = baseEnv({ NODE_PATH: path.join(PROJECT_ROOT, 'node_modules') });
    const argv = [process.execPath, argValue('baseline-script', ''), String(port), redis.url, workdir.publicKeyFile];
    const child = CPU_MODE
      ? spawn(argv[0]!, argv.slice(1), { env, stdio: 'ignore' })
      : spawn('valgrind', [...vg, ...argv], { env, stdio: 'ignore' });
    running.add(child);
    child.once('exit', () => running.delete(child));
    const url = `http://127.0.0.1:${port}`;
    await waitForHealth(url, child);
    return { child, url, env };
  }
  const [env, script, flags] =
    kind === 'service'
      ? [
          {
            ...common,
            PORT: String(port),
            HOST: '127.0.0.1',
            PLATFORM_PUBLIC_KEYS: `file:${workdir.publicKeyFile}`,
            LOG_LEVEL: 'info',
            ROLE: 'receiver',
            ADMIN_PORT: String(await freePort()),
            ADMIN_HOST: '127.0.0.1',
            MAX_CONNECTIONS_PER_SOURCE: '4096',
            ...serviceEnv(),
          },
          serviceModule(),
          process.argv.some((a) => a.startsWith('--node-flags='))
            ? argValue('node-flags', '').split(' ').filter(Boolean)
            : serviceNodeFlags(),
        ]
      : [
          {
            ...common,
            PUBLIC_KEY_FILE: workdir.publicKeyFile,
            RAW_CONCURRENCY: '1',
            ...(kind === 'express' ? { BASELINE_HTTP: 'express' } : {}),
          },
          benchModule('subjects/baseline-server'),
          [],
        ];
  // The service's log lines are formatted and written, to /dev/null, as in the bench.
  const fullEnv = baseEnv(env);
  const argv = [process.execPath, ...flags, script];
  const child = CPU_MODE
    ? spawn(argv[0]!, argv.slice(1), { env: fullEnv, stdio: ['ignore', 'ignore', 'ignore', 'ipc'] })
    : spawn('valgrind', [...vg, ...argv], { env: fullEnv, stdio: ['ignore', 'ignore', 'ignore', 'ipc'] });
  running.add(child);
  child.once('exit', () => running.delete(child));
  if (kind !== 'service') {
    // The baseline server listens on a port of its own choosing and says which over IPC.
    const ready = await waitForMessage<{ type: 'ready'; port: number }>(child, 'ready', 180_000);
    return { child, url: `http://127.0.0.1:${ready.port}`, env: fullEnv };
  }
  const url = `http://127.0.0.1:${port}`;
  await waitForHealth(url, child);
  return { child, url, env: fullEnv };
}

interface Instructions {
  total: number;
  /** V8's garbage collector (its helper threads included: valgrind runs them too). */
  gc: number;
  /** V8's compilers; still a few percent after the warm-up. */
  compiler: number;
}

const GC = /Marking|Sweep|Scaveng|Heap::|heap::|Evacuat|Remembered|SlotSet|MemoryChunk|Worklist|MinorMark|MarkCompact/;
const COMPILER = /compiler::|Compile|Turbofan|Maglev|Parser|Bytecode|interpreter::/;

/** Sums the dumps callgrind wrote into the folder, by function (callgrind_annotate), GC and compilers apart. */
function instructionsIn(outDir: string): Instructions {
  const sum: Instructions = { total: 0, gc: 0, compiler: 0 };
  for (const file of readdirSync(outDir).filter((f) => /^callgrind\.out\.\d+$/.test(f))) {
    const text = execFileSync('callgrind_annotate', ['--inclusive=no', '--threshold=100', path.join(outDir, file)], {
      encoding: 'utf8',
      maxBuffer: 256 * 1024 * 1024,
    });
    for (const line of text.split('\n')) {
      const m = /^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$/.exec(line);
      if (!m?.[1] || !m[2] || m[2].includes('PROGRAM TOTALS')) continue;
      const ir = Number(m[1].replace(/,/g, ''));
      sum.total += ir;
      if (GC.test(m[2])) sum.gc += ir;
      else if (COMPILER.test(m[2])) sum.compiler += ir;
    }
  }
  return sum;
}

/** Accepted notifications so far: each leaves one pending job (an outside baseline: one claimed nonce key). */
async function accepted(redis: BenchRedis, prefix: string): Promise<number> {
  if (prefix === 'irscript') return (await redis.admin.keys('nonce:*')).length;
  return (await jobTotals(redis.admin, keyPrefix(prefix))).pending;
}

async function waitForAccepted(redis: BenchRedis, prefix: string, count: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const n = await accepted(redis, prefix);
    if (n >= count || Date.now() > deadline) return n;
    await sleep(200);
  }
}

/**
 * Under a steady closed-loop load: instrumentation on after a warm-up, off again once `requests`
 * more notifications were accepted (counted in Redis), and the instructions between the two divided
 * by the notifications accepted between them. The commands reach a busy process promptly; an idle
 * one (blocked in epoll) may not take them at all, hence no switching between runs.
 */
async function measure(
  kind: Kind,
  redis: BenchRedis,
  workdir: Workdir,
  requests: number,
): Promise<{ perRequest: Instructions; accepted: number }> {
  await redis.flush();
  const prefix = `ir${kind}`;
  const outDir = mkdtempSync(path.join(tmpdir(), `whr-ir-${kind}-`));
  const { child, url, env } = await start(kind, redis, workdir, prefix, outDir);
  try {
    const warmup = Number(argValue('warmup', '6000'));
    // Requests are signed before the load starts and valid for 5 minutes: under valgrind, a few thousand.
    const total = warmup + requests * 2;
    const load = runLoad(
      workdir,
      // Under valgrind a loaded machine may answer a few dozen a second: the run's bound must allow it.
      { mode: 'saturate', url, amount: total, connections: 32, timeoutSec: 900 },
      await presign(workdir.privateKey, total + 32),
    );
    load.catch(() => undefined);
    await waitForAccepted(redis, prefix, warmup, 600_000);
    const before = await accepted(redis, prefix);
    const cpuBefore = cpuMsOf(child.pid!);
    if (!CPU_MODE) await callgrindControl(['--instr=on', String(child.pid)], env);
    await waitForAccepted(redis, prefix, before + requests, 600_000);
    if (!CPU_MODE) await callgrindControl(['--dump', String(child.pid)], env);
    const cpuUsed = cpuMsOf(child.pid!) - cpuBefore;
    const after = await accepted(redis, prefix);
    if (!CPU_MODE) await callgrindControl(['--instr=off', String(child.pid)], env);
    const run = await load;
    if (run.non2xx + run.errors > 0) throw new Error(`${kind}: ${run.non2xx} non-2xx, ${run.errors} errors`);
    const n = after - before;
    if (CPU_MODE) return { perRequest: { total: Math.round((cpuUsed * 1e6) / n), gc: 0, compiler: 0 }, accepted: n };
    const ir = instructionsIn(outDir);
    return {
      perRequest: { total: Math.round(ir.total / n), gc: Math.round(ir.gc / n), compiler: Math.round(ir.compiler / n) },
      accepted: n,
    };
  } finally {
    await stopChild(child, 30_000);
    if (process.env.IR_KEEP) process.stderr.write(`kept ${outDir}\n`);
    else rmSync(outDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const kinds = argValue('subjects', 'service,express,node').split(',') as Kind[];
  const requests = Number(argValue('requests', '1500'));
  const redis = await BenchRedis.start();
  const workdir = new Workdir();
  try {
    const results: Partial<Record<Kind, number>> = {};
    const k = (v: number) => `${Math.round(v / 1000).toLocaleString('en-US')}k`;
    for (const kind of kinds) {
      const { perRequest: p, accepted } = await measure(kind, redis, workdir, requests);
      results[kind] = p.total;
      process.stdout.write(
        CPU_MODE
          ? `${kind}: ${p.total.toLocaleString('en-US')} ns of CPU per accepted request (${accepted} requests)\n`
          : `${kind}: ${k(p.total)} instructions per accepted request: ${k(p.gc)} GC, ${k(p.compiler)} compilers, ${k(p.total - p.gc - p.compiler)} the rest (${accepted} requests)\n`,
      );
    }
    if (results.service && results.express)
      process.stdout.write(`service ÷ express: ${(results.service / results.express).toFixed(2)}x\n`);
    if (results.service && results.script)
      process.stdout.write(`service ÷ script: ${(results.service / results.script).toFixed(2)}x\n`);
    if (results.service && results.node)
      process.stdout.write(`service ÷ node:http: ${(results.service / results.node).toFixed(2)}x\n`);
  } finally {
    workdir.remove();
    await redis.stop();
  }
}

/** Subjects still running, killed by pid when this process is interrupted. */
const running = new Set<ChildProcess>();

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    for (const child of running) if (child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
    killAllChildren();
    process.exit(130);
  });
}

main().catch((err: Error) => {
  process.stderr.write(`${err.stack ?? err.message}\n`);
  for (const child of running) if (child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
  killAllChildren();
  process.exit(1);
});
