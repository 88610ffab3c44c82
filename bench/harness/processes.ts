import { fork, spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../src/config/project-root';

export const PROJECT_ROOT = projectRoot(__dirname);

/**
 * Built (`npm run bench`) the harness runs from dist/ and its children are plain JavaScript; under
 * jest (the smoke test) it runs from the TypeScript sources, so children get ts-node's
 * transpile-only loader and no build is needed.
 */
const RUNNING_FROM_TS = __filename.endsWith('.ts');

/** A module of the bench by its path under bench/ without extension (`subjects/raw-worker`), as source or built. */
export function benchModule(name: string): string {
  return path.join(__dirname, '..', `${name}${RUNNING_FROM_TS ? '.ts' : '.js'}`);
}

export function serviceModule(): string {
  return RUNNING_FROM_TS
    ? path.join(PROJECT_ROOT, 'src', 'main.ts')
    : path.join(PROJECT_ROOT, 'dist', 'src', 'main.js');
}

export function forwardingAvailable(): boolean {
  const dir = RUNNING_FROM_TS
    ? path.join(PROJECT_ROOT, 'src', 'forwarding')
    : path.join(PROJECT_ROOT, 'dist', 'src', 'forwarding');
  const file = path.join(dir, RUNNING_FROM_TS ? 'workers.ts' : 'workers.js');
  return existsSync(file);
}

/**
 * The V8 flags `npm start` gives the service (package.json), so the bench measures the service as it
 * is started in production; the image's CMD carries the same (test/start-command.test.ts).
 */
export function serviceNodeFlags(): string[] {
  if (nodeFlagsOverride !== undefined) return nodeFlagsOverride;
  const pkg = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
    scripts?: { start?: string };
  };
  return (pkg.scripts?.start ?? '').split(/\s+/).filter((arg) => arg.startsWith('--'));
}

let nodeFlagsOverride: string[] | undefined;

/** Experiments only (`--service-node-flags`): the service's V8 flags instead of those of `npm start`. */
export function overrideServiceNodeFlags(flags: string[] | undefined): void {
  nodeFlagsOverride = flags;
}

function loaderArgs(): string[] {
  return RUNNING_FROM_TS ? ['-r', require.resolve('ts-node/register/transpile-only')] : [];
}

/** A small, explicit environment, so a developer's REDIS_URL, ROLE or CONFIG_FILE cannot leak into a run. */
export function baseEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'LANG', 'TMPDIR']) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...extra };
}

const children = new Set<ChildProcess>();

function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** Kills, by pid, every child this harness started and that is still running (on failure or Ctrl-C). */
export function killAllChildren(): void {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined)
      process.kill(child.pid, 'SIGKILL');
  }
  children.clear();
}

export function forkBench(
  name: string,
  args: string[],
  env: Record<string, string>,
  nodeArgs: string[] = [],
): ChildProcess {
  return track(
    fork(benchModule(name), args, {
      cwd: PROJECT_ROOT,
      env: baseEnv(env),
      execArgv: [...loaderArgs(), ...nodeArgs],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
}

export function spawnService(env: Record<string, string>, stdio: StdioOptions, nodeArgs: string[] = []): ChildProcess {
  // Under jest the service runs through ts-node, whose compiler shares the heap: no production limits there.
  const limits = RUNNING_FROM_TS ? [] : serviceNodeFlags();
  return track(
    spawn(process.execPath, [...loaderArgs(), ...limits, ...nodeArgs, serviceModule()], {
      cwd: PROJECT_ROOT,
      env: baseEnv(env),
      stdio,
    }),
  );
}

export function spawnTracked(command: string, args: string[]): ChildProcess {
  return track(spawn(command, args, { stdio: 'ignore' }));
}

/** Resolves with the first IPC message of the given type; rejects when the child exits or time is up. */
export function waitForMessage<T extends { type: string }>(
  child: ChildProcess,
  type: T['type'],
  timeoutMs: number,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => finish(new Error(`no "${type}" message within ${timeoutMs} ms`)), timeoutMs);
    const onMessage = (msg: unknown) => {
      if (typeof msg === 'object' && msg !== null && (msg as { type?: unknown }).type === type)
        finish(undefined, msg as T);
    };
    const onExit = (code: number | null, signal: string | null) =>
      finish(new Error(`child exited (${code ?? signal}) before "${type}"`));
    const finish = (err?: Error, msg?: T) => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
      if (err) reject(err);
      else resolve(msg as T);
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

/** SIGTERM, then SIGKILL if the child has not exited within the bound. */
export { stopChild } from '../../src/demo/stop-child';
export { freePort } from '../../src/demo/redis-server';

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
