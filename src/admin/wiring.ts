import type { Express } from 'express';
import type { Registry } from 'prom-client';
import type { Config } from '../config/schema';
import type { Logger } from '../logging/logger';
import { createMasker } from '../logging/mask';
import { registerOrderingMetrics } from '../monitoring/ordering-metrics';
import { registerQueueMetrics } from '../monitoring/queue-metrics';
import { checkRedisDurability, durabilityRisks, type DurabilityRisk } from '../monitoring/redis-durability';
import { createDeadLetters } from '../operations/dead-letters';
import { createQuarantine } from '../operations/quarantine';
import type { Reloader } from '../operations/reload';
import { createResender } from '../operations/resend';
import { createTargetControl } from '../operations/targets';
import { buildOpenApiDocument } from '../openapi/document';
import type { Pipeline } from '../pipeline/pipeline';
import { createAdminApp } from './app';
import { environmentNames } from '../model/environments';
import { createExpectations } from '../reconciliation/expectations';
import type { OpenArchive } from '../archive/open';
import { archiveBacklog } from '../archive/archiver';
import { createArchiveHistory } from '../archive/history';
import { registerArchiveMetrics } from '../monitoring/archive-metrics';

/** The archive's /readyz detail and its gauges. */
function archiveStatusOf(archive: OpenArchive, pipeline: Pipeline, registry: Registry) {
  const status = async () => {
    const { entries, oldestAgeSeconds } = await archiveBacklog(pipeline.redis, pipeline.prefix);
    return { state: archive.archiver?.state().state ?? 'receiver', backlog: entries, oldestAgeSeconds };
  };
  registerArchiveMetrics(registry, status);
  return status;
}

/** Builds the admin app and its operations over the process's pipeline; the caller listens. */
export function wireAdmin(
  config: Config,
  pipeline: Pipeline,
  registry: Registry,
  logger: Logger,
  reloader?: Reloader,
  archive?: OpenArchive,
): Express {
  const redis = pipeline.redis;
  /** History beyond Redis (events and expectations), where an archive is configured. */
  const history = archive && createArchiveHistory(archive.pool);
  let openapi: Record<string, unknown> | undefined;
  const queueMetrics = registerQueueMetrics(registry, pipeline, logger);
  registerOrderingMetrics(registry, pipeline);
  let risks: DurabilityRisk[] | undefined;
  const checkDurability = () =>
    checkRedisDurability(redis).then(
      (nodes) => {
        risks = durabilityRisks(nodes);
        queueMetrics.recordDurability(risks);
        if (risks.length) {
          logger.warn(
            'Redis can lose acknowledged events: use maxmemory-policy noeviction and enable persistence (AOF)',
            { risks, nodes },
          );
        }
      },
      (err: Error) => logger.warn('could not read the Redis configuration', { error: err.message }),
    );
  if (redis.status === 'ready') void checkDurability();
  else redis.once('ready', () => void checkDurability());

  if (!config.adminReadOnlyDashboard) {
    logger.warn(
      'admin dashboard writes are ON (ADMIN_READ_ONLY_DASHBOARD=false): whoever holds the admin credential can add, ' +
        'retry, clean and remove jobs from the dashboard; every write is audited',
    );
  }
  return createAdminApp({
    credentials: {
      token: config.adminToken,
      user: config.adminUser,
      password: config.adminPassword,
      principals: config.adminPrincipals,
    },
    environments: environmentNames(config),
    redis,
    pipeline,
    durabilityRisks: () => risks,
    deadLetters: createDeadLetters(pipeline),
    quarantine: createQuarantine(pipeline, { allowCorrections: config.adminAllowCorrections, logger }),
    targets: createTargetControl(pipeline),
    resender: createResender(pipeline),
    expectations: createExpectations({
      pipeline,
      settings: config.expectations,
      environments: environmentNames(config),
      logger,
      archive: history,
    }),
    reloader,
    registry,
    // Few processes are ever asked for it: built on the first request (0.24 MB of live heap), then kept.
    openapi: () =>
      (openapi ??= buildOpenApiDocument({
        headerPrefix: config.signatureHeaderPrefix,
        basePath: config.callbackBasePath,
      })),
    mask: createMasker(config.sensitiveFields),
    readOnlyDashboard: config.adminReadOnlyDashboard,
    logger,
    ...(archive && history ? { archive: history, archiveStatus: archiveStatusOf(archive, pipeline, registry) } : {}),
  });
}
