/**
 * What the completed-job retention costs in Redis memory: the bytes one delivered event keeps while
 * it can still be resent (its event job and its delivery job, with the body), measured by filling a
 * throwaway Redis through the real service and emptying the completed sets again.
 *
 *   npx ts-node bench/retention-memory.ts [events=2000] [targets=1]
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
import { eventDefinition } from '../src/model/event-table';
import { createLogger } from '../src/logging/logger';
import { createMetrics } from '../src/monitoring/metrics';
import { createRedisConnector } from '../src/redis/connect';
import { startService } from '../src/service';
import { generateTestKeyPair } from '../src/signing/keypair';
import { sampleBody } from '../src/signing/samples';
import { signCurrent } from '../src/signing/sign';

async function usedMemory(redis: Redis): Promise<number> {
  await new Promise((r) => setTimeout(r, 200));
  const info = await redis.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)![1]);
}

async function main(): Promise<void> {
  const events = Number(process.argv[2] ?? 2000);
  const targetCount = Number(process.argv[3] ?? 1);
  const redisServer = await RedisServer.start();
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
  const dir = mkdtempSync(path.join(tmpdir(), 'retention-'));
  const file = path.join(dir, 'config.yaml');
  writeFileSync(
    file,
    stringify({
      targets: Array.from({ length: targetCount }, (_, i) => ({ name: `t${i}`, url: sinkUrl, events: ['*'] })),
    }),
  );
  const keys = generateTestKeyPair();
  const env = {
    REDIS_URL: redisServer.url,
    CONFIG_FILE: file,
    PLATFORM_PUBLIC_KEYS: keys.publicKeyBase64,
    PORT: '0',
    ADMIN_PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'error',
  };
  const config = loadConfig(env);
  const service = await startService(
    config,
    loadEnvironments(config),
    createLogger('error'),
    createMetrics(),
    createRedisConnector(config),
    env,
  );
  const port = service.receiver!.port;

  const before = await usedMemory(redis);
  const type = 'payment.result';
  const target = eventDefinition(type).path;
  for (let i = 0; i < events; i += 10) {
    await Promise.all(
      Array.from({ length: Math.min(10, events - i) }, async () => {
        const body = Buffer.from(sampleBody(type));
        const headers = {
          'content-type': 'application/json',
          ...signCurrent({ privateKey: keys.privateKeyPem, target, body }),
        };
        const res = await fetch(`http://127.0.0.1:${port}${target}`, { method: 'POST', headers, body });
        if (res.status !== 200) throw new Error(`answer ${res.status}`);
      }),
    );
  }
  while (delivered < events * targetCount) await new Promise((r) => setTimeout(r, 100));
  await new Promise((r) => setTimeout(r, 500));
  const filled = await usedMemory(redis);
  // What retention removes after ageSeconds: the completed jobs. De-duplication keys and the request
  // index stay for the de-duplication window whatever the retention, so they are not counted.
  for (const queue of service.pipeline.allQueues()) await queue.clean(0, 1_000_000, 'completed');
  const emptied = await usedMemory(redis);

  const perEvent = (filled - emptied) / events;
  const bodyBytes = Buffer.byteLength(sampleBody(type));
  const lines = [
    `events ${events}, targets ${targetCount}, sample body ${bodyBytes} bytes`,
    `used_memory: before ${before}, after delivery ${filled}, completed jobs removed ${emptied}`,
    `retention cost per delivered event: ${Math.round(perEvent)} bytes`,
    ...[1, 10, 100].map((rate) => {
      const perHour = rate * 3600;
      const capped = Math.min(perHour, config.retention.completed.count);
      return (
        `  at ${rate}/s: ${perHour} events an hour -> ${((perHour * perEvent) / 1048576).toFixed(1)} MiB per hour of retention` +
        (capped < perHour
          ? ` (the count cap of ${config.retention.completed.count} jobs per queue holds it to ${((capped * perEvent) / 1048576).toFixed(1)} MiB)`
          : '')
      );
    }),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  await service.close();
  sink.close();
  redis.disconnect();
  await redisServer.stop();
  rmSync(dir, { recursive: true, force: true });
}

main().catch((err: Error) => {
  process.stderr.write(`${err.stack ?? err.message}\n`);
  process.exit(1);
});
