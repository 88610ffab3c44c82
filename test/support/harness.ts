import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { RequestListener } from 'node:http';
import { loadEnvironments } from '../../src/config/keys';
import { loadConfig } from '../../src/config/load';
import type { Config } from '../../src/config/schema';
import { createLogger } from '../../src/logging/logger';
import { createMetrics, ingestObserver, type Metrics } from '../../src/monitoring/metrics';
import { createRedisConnector, whenReady, type RedisClient, type RedisConnector } from '../../src/redis/connect';
import { createPipeline, pipelineOptions, type Pipeline } from '../../src/pipeline/pipeline';
import { buildReceiverApp } from '../../src/receiver';

export function testRedisUrl(): string {
  const url = process.env.TEST_REDIS_URL;
  if (!url) throw new Error('TEST_REDIS_URL is not set: run the tests through jest (global setup starts Redis)');
  return url;
}

export function uniquePrefix(): string {
  return `t${randomBytes(4).toString('hex')}`;
}

/** Captured JSON log lines. */
export class LogCapture {
  readonly stream = new PassThrough();
  readonly lines: Record<string, unknown>[] = [];
  readonly raw: string[] = [];
  constructor() {
    this.stream.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) {
        this.raw.push(line);
        this.lines.push(JSON.parse(line) as Record<string, unknown>);
      }
    });
  }
  find(predicate: (line: Record<string, unknown>) => boolean): Record<string, unknown> | undefined {
    return this.lines.find(predicate);
  }
}

export function testConfig(env: Record<string, string | undefined>): Config {
  return loadConfig({ QUEUE_PREFIX: uniquePrefix(), REDIS_URL: testRedisUrl(), ...env });
}

export interface Harness {
  app: RequestListener;
  config: Config;
  /** The queues, as the entry point builds them once per process. */
  pipeline: Pipeline;
  /** The configured topology's factory, as the service gets it. */
  connector: RedisConnector;
  /** A connection for the test's own reads; waits out a Redis that is down. */
  redis: RedisClient;
  logs: LogCapture;
  metrics: Metrics;
  /** Resolves once the receiver's connection is ready: a cold cluster client takes seconds on a loaded machine. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

/** The real public app on a real Redis, with an injectable clock and captured logs; `adjust` edits the config first. */
export function buildHarness(
  env: Record<string, string | undefined>,
  clock: () => number = Date.now,
  adjust: (config: Config) => Config = (c) => c,
): Harness {
  const config = adjust(testConfig(env));
  const logs = new LogCapture();
  const logger = createLogger(config.logLevel, logs.stream);
  const metrics = createMetrics();
  const connector = createRedisConnector(config);
  const connection = connector.open('producer');
  connection.on('error', () => undefined);
  const pipeline = createPipeline(connection, pipelineOptions(config), ingestObserver(metrics, logger));
  const app = buildReceiverApp({ config, environments: loadEnvironments(config), logger, metrics, clock, pipeline });
  const redis = connector.open('worker');
  redis.on('error', () => undefined);
  return {
    app,
    config,
    pipeline,
    connector,
    redis,
    ready: () => whenReady(connection),
    logs,
    metrics,
    async close() {
      await pipeline.close();
      connection.disconnect();
      redis.disconnect();
    },
  };
}
