/**
 * For the separate measurements that run the real service inside their own process
 * (`retention-memory.ts`, `aof-volume.ts`): a throwaway Redis, a target that counts what it is given,
 * the service started as `main.ts` starts it, and signed notifications sent to its receiver.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { stringify } from 'yaml';
import { startMerchantSystem } from '../../src/demo/merchant-system';
import { RedisServer } from '../../src/demo/redis-server';
import { loadEnvironments } from '../../src/config/keys';
import { loadConfig } from '../../src/config/load';
import type { Config } from '../../src/config/schema';
import { eventDefinition, type EventType } from '../../src/model/event-table';
import { createLogger } from '../../src/logging/logger';
import { createMetrics } from '../../src/monitoring/metrics';
import { createRedisConnector } from '../../src/redis/connect';
import { startService, type RunningService } from '../../src/service';
import { generateTestKeyPair, type TestKeyPair } from '../../src/signing/keypair';
import { sampleBody } from '../../src/signing/samples';
import { signCurrent } from '../../src/signing/sign';

export interface CountingSink {
  /** The target's URL. */
  url: string;
  /** Resolves once `count` deliveries have been answered; fails after `timeoutMs` without a new one. */
  waitFor(count: number, timeoutMs?: number): Promise<void>;
  close(): void;
}

/** The demo's stand-in for a merchant system, quiet, which answers every delivery 204 and counts them. */
export async function countingSink(): Promise<CountingSink> {
  const target = await startMerchantSystem(() => undefined, 'sink');
  return {
    url: target.url,
    async waitFor(count, timeoutMs = 30_000) {
      let seen = target.received();
      let since = Date.now();
      while (target.received() < count) {
        if (target.received() !== seen) [seen, since] = [target.received(), Date.now()];
        else if (Date.now() - since > timeoutMs)
          throw new Error(`${target.received()} of ${count} deliveries, none for ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    close: () => target.server.close(),
  };
}

/**
 * The service on `redisUrl` with the configuration file `configFile`, its logs at error level, the
 * public and admin ports on free ports of 127.0.0.1: `role` as ROLE sets it.
 */
export async function startInProcess(
  redisUrl: string,
  configFile: string,
  keys: TestKeyPair,
  role: 'all' | 'receiver' | 'worker' = 'all',
): Promise<{ service: RunningService; config: Config }> {
  const env = {
    REDIS_URL: redisUrl,
    CONFIG_FILE: configFile,
    PLATFORM_PUBLIC_KEYS: keys.publicKeyBase64,
    PORT: '0',
    ADMIN_PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'error',
    ROLE: role,
  };
  const config = loadConfig(env);
  const service = await startService(
    config,
    role === 'worker' ? [] : loadEnvironments(config),
    createLogger('error'),
    createMetrics(),
    createRedisConnector(config),
    env,
  );
  return { service, config };
}

/**
 * Sends `count` sample notifications, signed with `keys`, to the receiver on `port`, ten at a time;
 * `typeOf(i)` names the i-th one's type. Any answer but 200 fails the run. Returns the body bytes sent.
 */
export async function sendSamples(
  port: number,
  keys: TestKeyPair,
  count: number,
  typeOf: (i: number) => EventType,
): Promise<number> {
  let bodyBytes = 0;
  for (let i = 0; i < count; i += 10) {
    await Promise.all(
      Array.from({ length: Math.min(10, count - i) }, async (_, j) => {
        const type = typeOf(i + j);
        const target = eventDefinition(type).path;
        const body = Buffer.from(sampleBody(type));
        bodyBytes += body.length;
        const headers = {
          'content-type': 'application/json',
          ...signCurrent({ privateKey: keys.privateKeyPem, target, body }),
        };
        const res = await fetch(`http://127.0.0.1:${port}${target}`, { method: 'POST', headers, body });
        if (res.status !== 200) throw new Error(`answer ${res.status}`);
      }),
    );
  }
  return bodyBytes;
}

/** What a measurement runs against; `measurement` makes it and takes it down. */
export interface Scratch {
  redisUrl: string;
  /** A connection of the measurement's own, for INFO and the like. */
  redis: Redis;
  sink: CountingSink;
  /** A folder of its own (Redis's files, when it keeps any, are there too). */
  dir: string;
  keys: TestKeyPair;
  /** Writes the service's configuration file (YAML) into `dir` and returns its path. */
  writeConfig(config: object): string;
}

/**
 * Runs `measure` against a fresh Redis (`redisArgs(dir)` added to its command line), a counting
 * sink and a new platform key pair, prints the lines it returns, and removes everything again,
 * failed or not. A failure is printed and the process exits 1.
 */
export function measurement(redisArgs: (dir: string) => string[], measure: (s: Scratch) => Promise<string[]>): void {
  const run = async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'whr-measure-'));
    let redisServer: RedisServer | undefined;
    let redis: Redis | undefined;
    let sink: CountingSink | undefined;
    try {
      redisServer = await RedisServer.start({ args: redisArgs(dir) });
      redis = new Redis(redisServer.url);
      sink = await countingSink();
      const lines = await measure({
        redisUrl: redisServer.url,
        redis,
        sink,
        dir,
        keys: generateTestKeyPair(),
        writeConfig(config) {
          const file = path.join(dir, 'config.yaml');
          writeFileSync(file, stringify(config));
          return file;
        },
      });
      process.stdout.write(`${lines.join('\n')}\n`);
    } finally {
      sink?.close();
      redis?.disconnect();
      await redisServer?.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  };
  run().catch((err: Error) => {
    process.stderr.write(`${err.stack ?? err.message}\n`);
    process.exit(1);
  });
}
