/**
 * What Redis's append-only file takes per notification: the bytes one received notification writes
 * to the AOF, and the bytes its delivery adds (the completed jobs trimmed as `retention.completed`
 * asks included), measured through the real service on a throwaway Redis with AOF on and rewrites
 * off, so that the file holds every write. A receiver takes the notifications first, then a worker
 * delivers them, so each side is counted apart.
 *
 *   npx ts-node bench/aof-volume.ts [events=2000] [targets=1]
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { stringify } from 'yaml';
import { loadEnvironments } from '../src/config/keys';
import { loadConfig } from '../src/config/load';
import { RedisServer } from '../src/demo/redis-server';
import { EVENT_TABLE } from '../src/model/event-table';
import { createLogger } from '../src/logging/logger';
import { createMetrics } from '../src/monitoring/metrics';
import { createRedisConnector } from '../src/redis/connect';
import { startService, type RunningService } from '../src/service';
import { generateTestKeyPair } from '../src/signing/keypair';
import { sampleBody } from '../src/signing/samples';
import { signCurrent } from '../src/signing/sign';

/** Few enough that trimming the completed jobs is under way for most of the deliveries counted. */
const KEEP_COMPLETED = 100;

/** Redis's default `auto-aof-rewrite-min-size`: the size at which the first rewrite starts. */
const DEFAULT_REWRITE_MIN_BYTES = 64 * 1024 * 1024;

async function aofBytes(redis: Redis): Promise<number> {
  // Redis writes the AOF buffer before it next waits for clients; a moment lets the last writes land.
  await new Promise((r) => setTimeout(r, 300));
  const m = /^aof_current_size:(\d+)/m.exec(await redis.info('persistence'));
  if (!m?.[1]) throw new Error('INFO persistence has no aof_current_size: is appendonly on?');
  return Number(m[1]);
}

async function main(): Promise<void> {
  const events = Number(process.argv[2] ?? 2000);
  const targetCount = Number(process.argv[3] ?? 1);
  const dir = mkdtempSync(path.join(tmpdir(), 'aof-volume-'));
  const redisServer = await RedisServer.start({
    args: ['--appendonly', 'yes', '--appendfsync', 'everysec', '--auto-aof-rewrite-percentage', '0', '--dir', dir],
  });
  const redis = new Redis(redisServer.url);
  let delivered = 0;
  const sink = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      delivered++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', () => r()));
  const sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/hook`;
  const file = path.join(dir, 'config.yaml');
  writeFileSync(
    file,
    stringify({
      retention: { completed: { ageSeconds: 3600, count: KEEP_COMPLETED } },
      targets: Array.from({ length: targetCount }, (_, i) => ({ name: `t${i}`, url: sinkUrl, events: ['*'] })),
    }),
  );
  const keys = generateTestKeyPair();
  const start = async (role: 'receiver' | 'worker'): Promise<RunningService> => {
    const env = {
      REDIS_URL: redisServer.url,
      CONFIG_FILE: file,
      PLATFORM_PUBLIC_KEYS: keys.publicKeyBase64,
      PORT: '0',
      ADMIN_PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'error',
      ROLE: role,
    };
    const config = loadConfig(env);
    return startService(
      config,
      role === 'worker' ? [] : loadEnvironments(config),
      createLogger('error'),
      createMetrics(),
      createRedisConnector(config),
      env,
    );
  };

  const receiver = await start('receiver');
  const port = receiver.receiver!.port;
  const atStart = await aofBytes(redis);
  let bodyBytes = 0;
  for (let i = 0; i < events; i += 10) {
    await Promise.all(
      Array.from({ length: Math.min(10, events - i) }, async (_, j) => {
        const { type, path: target } = EVENT_TABLE[(i + j) % EVENT_TABLE.length]!;
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
  const received = await aofBytes(redis);
  await receiver.close();

  const worker = await start('worker');
  while (delivered < events * targetCount) await new Promise((r) => setTimeout(r, 100));
  const done = await aofBytes(redis);
  await worker.close();

  const perReceived = (received - atStart) / events;
  const perDelivery = (done - received) / (events * targetCount);
  const perEvent = perReceived + perDelivery * targetCount;
  const lines = [
    `events ${events} (the seven types in turn, bodies ${Math.round(bodyBytes / events)} bytes on average), targets ${targetCount}, ` +
      `completed jobs kept ${KEEP_COMPLETED} per queue`,
    `AOF bytes: at start ${atStart}, after receiving ${received}, after delivering ${done}`,
    `per notification received: ${Math.round(perReceived)} bytes; per delivery: ${Math.round(perDelivery)} bytes; ` +
      `per notification received and delivered: ${Math.round(perEvent)} bytes`,
    ...[100, 1000].map(
      (rate) =>
        `  at ${rate}/s: ${((rate * perEvent) / 1048576).toFixed(2)} MiB/s of AOF; Redis's default first rewrite ` +
        `(at ${DEFAULT_REWRITE_MIN_BYTES / 1048576} MiB) after ${Math.round(DEFAULT_REWRITE_MIN_BYTES / (rate * perEvent))} s`,
    ),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  sink.close();
  redis.disconnect();
  await redisServer.stop();
  rmSync(dir, { recursive: true, force: true });
}

main().catch((err: Error) => {
  process.stderr.write(`${err.stack ?? err.message}\n`);
  process.exit(1);
});
