import { withTargetEnvironments } from '../../src/config/environments';
import type { Config } from '../../src/config/schema';
import { createDeadLetters, type DeadLetters } from '../../src/operations/dead-letters';
import { targetSchema } from '../../src/model/target-schema';
import { startWorkers, type RunningWorkers } from '../../src/forwarding/workers';
import { createLogger } from '../../src/logging/logger';
import type { Metrics } from '../../src/monitoring/metrics';
import { wireAdmin } from '../../src/admin/wiring';
import type { Express } from 'express';
import type { Pipeline } from '../../src/pipeline/pipeline';
import { buildHarness, LogCapture, type Harness } from './harness';
import type { FakePlatform } from './platform';
import type { TargetServer } from './target-server';

export const ADMIN_TEST_TOKEN = 'test-admin-token-0123456789';

export interface ForwardingHarness {
  receiver: Harness;
  config: Config;
  /** The one pipeline receiver, workers and admin share, as in one process. */
  pipeline: Pipeline;
  workers: RunningWorkers;
  metrics: Metrics;
  logs: LogCapture;
  deadLetters: DeadLetters;
  platform: FakePlatform;
  /** The admin app over the same Redis, with ADMIN_TOKEN = ADMIN_TEST_TOKEN. */
  admin: Express;
  adminLogs: LogCapture;
  close(): Promise<void>;
}

/** The receiver app plus in-process workers forwarding to the given targets, on a fresh queue prefix. */
export function buildForwarding(
  platform: FakePlatform,
  targets: Record<string, unknown>[],
  env: Record<string, string> = {},
  adjust: (config: Config) => Config = (c) => c,
): ForwardingHarness {
  const receiver = buildHarness(
    { PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64, ADMIN_TOKEN: ADMIN_TEST_TOKEN, ...env },
    Date.now,
    (base) =>
      // As the loader gives them: each target with the environments it takes.
      withTargetEnvironments({
        ...base,
        // Short timeouts and backoff so retries happen in milliseconds; the rest are the real defaults.
        targets: targets.map((t) =>
          targetSchema.parse({
            events: ['*'],
            timeoutMs: 2000,
            maxAttempts: 3,
            backoff: { initialMs: 50, maxMs: 200 },
            ...t,
          }),
        ),
        worker: { lockDurationMs: 5000, stalledIntervalMs: 1000, shutdownTimeoutMs: 2000 },
      }).config,
  );
  const config = adjust(receiver.config);
  const { pipeline } = receiver;
  const logs = new LogCapture();
  const metrics = receiver.metrics; // one registry for receiver, workers and admin, as in one process
  const logger = createLogger('info', logs.stream);
  const workers = startWorkers(config, pipeline, logger, metrics, receiver.connector);
  const adminLogs = new LogCapture();
  const admin = wireAdmin(config, pipeline, metrics.registry, createLogger('info', adminLogs.stream));
  return {
    receiver,
    config,
    pipeline,
    workers,
    metrics,
    logs,
    deadLetters: createDeadLetters(pipeline),
    platform,
    admin,
    adminLogs,
    async close() {
      await workers.close();
      await receiver.close();
    },
  };
}

export async function waitUntil(
  predicate: () => Promise<boolean> | boolean,
  timeoutMs = 10000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`${what} not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * Sends one payment.result and waits until `delivered` has it (its delivery completed) and the
 * delivery to `deadTarget` is a dead letter: the event the resend and delivery-story tests start from.
 * Returns its event id.
 */
export async function sendDeliveredAndDeadLettered(
  f: ForwardingHarness,
  delivered: TargetServer,
  deliveredTarget: string,
  deadTarget: string,
): Promise<string> {
  await f.platform.send(f.receiver.app, f.platform.signed('payment.result')).expect(200);
  await delivered.waitFor(() => delivered.successes().length === 1);
  const eventId = String(delivered.requests[0]!.headers['webhook-id']);
  await waitUntil(
    async () => (await f.deadLetters.list({ target: deadTarget })).length === 1,
    10000,
    `${deadTarget} dead-lettered`,
  );
  await waitUntil(
    async () => (await f.pipeline.deliveryQueue(deliveredTarget)!.getJobState(eventId)) === 'completed',
    5000,
    `${deliveredTarget} completed`,
  );
  return eventId;
}

/**
 * How many of `times` (ms, any order) fall in each rate-limit window: a window opens at the first time
 * not in the one before and lasts `windowMs` (give it a little less than the limiter's, for the
 * clocks' jitter).
 */
export function perWindow(times: readonly number[], windowMs: number): number[] {
  const windows: number[] = [];
  let start = -Infinity;
  for (const t of [...times].sort((a, b) => a - b)) {
    if (t >= start + windowMs) {
      start = t;
      windows.push(0);
    }
    windows[windows.length - 1]!++;
  }
  return windows;
}
