import type { Config } from '../../src/config/schema';
import { loadEnvironments } from '../../src/config/keys';
import { createLogger } from '../../src/logging/logger';
import { createMetrics, type Metrics } from '../../src/monitoring/metrics';
import { createRedisConnector } from '../../src/redis/connect';
import { createPipeline, pipelineOptions, type Pipeline } from '../../src/pipeline/pipeline';
import { startReceiver, type RunningReceiver } from '../../src/receiver';
import { LogCapture, testConfig } from './harness';

export interface LiveReceiver {
  receiver: RunningReceiver;
  config: Config;
  pipeline: Pipeline;
  port: number;
  logs: LogCapture;
  metrics: Metrics;
  close(): Promise<void>;
}

/**
 * The real receiver listening on a free port of 127.0.0.1, on the tests' Redis and a fresh queue
 * prefix; `adjust` changes the loaded configuration (e.g. small server timeouts) before it starts.
 */
export async function startLiveReceiver(
  env: Record<string, string>,
  adjust: (c: Config) => Config = (c) => c,
): Promise<LiveReceiver> {
  const config = adjust(testConfig({ PORT: '0', HOST: '127.0.0.1', ...env }));
  const logs = new LogCapture();
  const metrics = createMetrics(undefined, false);
  const connection = createRedisConnector(config).open('producer');
  connection.on('error', () => undefined);
  const pipeline = createPipeline(connection, pipelineOptions(config));
  const receiver = await startReceiver({
    config,
    environments: loadEnvironments(config),
    logger: createLogger(config.logLevel, logs.stream),
    metrics,
    pipeline,
  });
  return {
    receiver,
    config,
    pipeline,
    port: receiver.port,
    logs,
    metrics,
    async close() {
      await receiver.close();
      await pipeline.close();
      connection.disconnect();
    },
  };
}
