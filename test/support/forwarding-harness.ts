import { Queue } from 'bullmq';
import type { Config } from '../../src/config/schema';
import { createDeadLetters, type DeadLetters } from '../../src/operations/dead-letters';
import { openDeliveryQueues, closeQueues } from '../../src/forwarding/delivery-queues';
import { targetSchema } from '../../src/forwarding/target-schema';
import { startWorkers, type RunningWorkers } from '../../src/forwarding/workers';
import { createLogger } from '../../src/logging/logger';
import type { Metrics } from '../../src/monitoring/metrics';
import { wireAdmin } from '../../src/admin/wiring';
import type { Express } from 'express';
import { createProducerConnection } from '../../src/queue/connection';
import { buildHarness, LogCapture, type Harness } from './harness';
import { FakePlatform } from './platform';

export const ADMIN_TEST_TOKEN = 'test-admin-token-0123456789';

export interface ForwardingHarness {
  receiver: Harness;
  config: Config;
  workers: RunningWorkers;
  metrics: Metrics;
  logs: LogCapture;
  deliveryQueues: Map<string, Queue>;
  deadLetters: DeadLetters;
  platform: FakePlatform;
  /** The admin app over the same Redis, with ADMIN_TOKEN = ADMIN_TEST_TOKEN. */
  admin: Express;
  adminLogs: LogCapture;
  close(): Promise<void>;
}

/** The receiver app plus in-process workers forwarding to the given targets, on a fresh queue prefix. */
export function buildForwarding(platform: FakePlatform, targets: Record<string, unknown>[], env: Record<string, string> = {}): ForwardingHarness {
  const receiver = buildHarness({ PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64, ADMIN_TOKEN: ADMIN_TEST_TOKEN, ...env });
  const config: Config = {
    ...receiver.config,
    // Short timeouts and backoff so retries happen in milliseconds; the rest are the real defaults.
    targets: targets.map((t) => targetSchema.parse({ events: ['*'], timeoutMs: 2000, maxAttempts: 3, backoff: { initialMs: 50, maxMs: 200 }, ...t })),
    worker: { lockDurationMs: 5000, stalledIntervalMs: 1000, shutdownTimeoutMs: 2000 },
  };
  const logs = new LogCapture();
  const metrics = receiver.metrics; // one registry for receiver, workers and admin, as in one process
  const logger = createLogger('info', logs.stream);
  const workers = startWorkers(config, logger, metrics);
  const connection = createProducerConnection(config.redisUrl);
  const adminLogs = new LogCapture();
  const admin = wireAdmin(config, connection, metrics.registry, createLogger('info', adminLogs.stream));
  const deliveryQueues = openDeliveryQueues(connection, config.queuePrefix, config.targets);
  return {
    receiver,
    config,
    workers,
    metrics,
    logs,
    deliveryQueues,
    deadLetters: createDeadLetters(deliveryQueues),
    platform,
    admin: admin.app,
    adminLogs,
    async close() {
      await workers.close();
      await admin.queues.close();
      await closeQueues(deliveryQueues);
      connection.disconnect();
      await receiver.close();
    },
  };
}

export async function waitUntil(predicate: () => Promise<boolean> | boolean, timeoutMs = 10000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`${what} not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
