import { startAdmin, type RunningAdmin } from './admin/server';
import { loadApiEnvironments, type ApiEnvironment } from './config/api-environments';
import { environmentNames } from './model/environments';
import type { PlatformEnvironment } from './config/keys';
import type { Config } from './config/schema';
import { startWorkers, type RunningWorkers } from './forwarding/workers';
import type { Logger } from './logging/logger';
import { ingestObserver, type Metrics } from './monitoring/metrics';
import { createPipeline, pipelineOptions, type Pipeline } from './pipeline/pipeline';
import { createReloader, type Reloader } from './operations/reload';
import { startReceiver, type RunningReceiver } from './receiver';
import { reportConnectionErrors, type RedisConnector } from './redis/connect';
import { startReconciler, type Reconciler } from './reconciliation/reconciler';
import { createExpectationStore } from './reconciliation/store';
import { openArchive, type OpenArchive } from './archive/open';

export interface RunningService {
  pipeline: Pipeline;
  receiver?: RunningReceiver;
  workers?: RunningWorkers;
  admin: RunningAdmin;
  /** Watches over expectations and asks the platform about overdue ones (where workers run). */
  reconciler?: Reconciler;
  /** The evidence archive, when ARCHIVE_URL names one. */
  archive?: OpenArchive;
  /** Re-reads the configuration in this process: targets take effect, other changes are reported. */
  reloader: Reloader;
  close(): Promise<void>;
}

/**
 * Starts what ROLE asks for: the receiver, the workers, or both (the default); every process also
 * has the admin listener. Several receivers and workers on different machines can share one Redis.
 * The queues are opened here, once, and handed to each part.
 */
export async function startService(
  config: Config,
  /** The platform's environments with their keys (`loadEnvironments`); none in a worker-only process. */
  environments: readonly PlatformEnvironment[],
  logger: Logger,
  metrics: Metrics,
  redis: RedisConnector,
  /** The environment the configuration was loaded from, for reloads. */
  env: Record<string, string | undefined> = {},
  /** The environments whose API is configured (`loadApiEnvironments`); read from `env` when not given. */
  apiEnvironments: readonly ApiEnvironment[] = loadApiEnvironments(config, env),
): Promise<RunningService> {
  const connection = redis.open('producer');
  reportConnectionErrors(connection, logger, 'producer');
  const pipeline = createPipeline(connection, pipelineOptions(config), ingestObserver(metrics, logger));
  const archive = openArchive(config, redis, logger);
  const receiver =
    config.role !== 'worker' ? await startReceiver({ config, environments, logger, metrics, pipeline }) : undefined;
  const workers = config.role !== 'receiver' ? startWorkers(config, pipeline, logger, metrics, redis) : undefined;
  const reconciler =
    config.role !== 'receiver'
      ? startReconciler({
          store: createExpectationStore(pipeline.redis, pipeline.prefix, {
            archive: pipeline.options.archive === true,
            dedupWindowMs: pipeline.options.dedupWindowMs,
          }),
          settings: config.expectations,
          environments: apiEnvironments,
          environmentNames: environmentNames(config),
          producer: pipeline,
          metrics,
          logger,
          toleranceMs: config.timestampToleranceMs,
          headerPrefix: config.signatureHeaderPrefix,
        })
      : undefined;
  const reloader = createReloader({ env, config, pipeline, workers, logger });
  const admin = await startAdmin(config, pipeline, logger, metrics.registry, reloader, archive);
  return {
    pipeline,
    receiver,
    workers,
    admin,
    reconciler,
    archive,
    reloader,
    async close() {
      // Stop taking notifications first, then let deliveries finish, then the admin port, then the queues.
      await receiver?.close();
      await reconciler?.close();
      await workers?.close();
      await archive?.close();
      await admin.close();
      await pipeline.close();
      connection.disconnect();
    },
  };
}
