import { spawn } from 'node:child_process';
import path from 'node:path';
import { loadEnvironments } from '../../src/config/keys';
import { loadConfig } from '../../src/config/load';
import { createLogger } from '../../src/logging/logger';
import { createMetrics } from '../../src/monitoring/metrics';
import { createRedisConnector } from '../../src/redis/connect';
import { startService, type RunningService } from '../../src/service';
import { LogCapture, testRedisUrl, uniquePrefix } from './harness';

/** The whole service in this process, from the environment as main.ts reads it; its log lines in `logs`. */
export async function startInProcess(
  env: Record<string, string>,
  logs: LogCapture = new LogCapture(),
): Promise<RunningService> {
  const config = loadConfig(env);
  return startService(
    config,
    loadEnvironments(config),
    createLogger('info', logs.stream),
    createMetrics(),
    createRedisConnector(config),
    env,
  );
}

/** The environment a test service runs with: the suite's Redis, a fresh queue prefix, free ports on 127.0.0.1. */
export function serviceEnv(
  publicKey: string,
  more: Record<string, string>,
): { REDIS_URL: string; QUEUE_PREFIX: string; [name: string]: string } {
  return {
    REDIS_URL: testRedisUrl(),
    QUEUE_PREFIX: uniquePrefix(),
    PLATFORM_PUBLIC_KEYS: publicKey,
    PORT: '0',
    ADMIN_PORT: '0',
    HOST: '127.0.0.1',
    ...more,
  };
}

/** Runs src/main.ts in a process of its own (through ts-node) until it exits: its exit code and stderr. */
export async function runMain(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const main = path.resolve(__dirname, '../../src/main.ts');
  const child = spawn(process.execPath, ['-r', 'ts-node/register', main], {
    env: { ...process.env, TS_NODE_SWC: 'true', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, stderr };
}
