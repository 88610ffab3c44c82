import { applyRoleV8Settings, applyV8Settings, holdYoungGeneration } from './v8-settings';
// First, before the modules below load (the compiled requires run in this order).
holdYoungGeneration();
import { loadApiEnvironments } from './config/api-environments';
import { loadEnvironments } from './config/keys';
import { ConfigError } from './config/errors';
import { mistypedEnv } from './config/env-warnings';
import { loadConfigDetailed } from './config/load';
import { unsignedAcceptWarnings } from './config/warnings';
import { createLogger } from './logging/logger';
import { createMetrics } from './monitoring/metrics';
import { keyPrefix } from './model/names';
import { createRedisConnector } from './redis/connect';
import { inquiryFunctionProblems } from './reconciliation/functions';
import { startService } from './service';
import { startTracing } from './tracing/start';
import { maskedEndpoint, tracingSettings } from './tracing/settings';
import { exitCodeOf, ServiceError } from './model/errors';
import { transformProblems } from './transform/check';
import { checkPostgresTables } from './forwarding/destinations/postgres-table';

/** What a shutdown may take beyond the receiver's and the workers' own bounds before the process leaves anyway. */
const SHUTDOWN_MARGIN_MS = 5000;

async function main(): Promise<void> {
  applyV8Settings();
  let config;
  let environments;
  let redis;
  let apiEnvironments;
  let configWarnings: string[] = [];
  let tablesCreated: string[] = [];
  // The logger needs the config, so key warnings wait here and are logged once it exists.
  const keyWarnings: [string, Record<string, unknown>][] = [];
  try {
    const loaded = loadConfigDetailed(process.env);
    config = loaded.config;
    configWarnings = [...loaded.warnings, ...unsignedAcceptWarnings(config)];
    // Every target's transform compiles, or the service does not start (the target, the file, the line).
    const transforms = await transformProblems(config.targets);
    if (transforms.length) throw new ConfigError(transforms);
    // A postgres target's table is there with its columns (or createTable made it), or the service does not start.
    if (config.role !== 'receiver') {
      const tables = await checkPostgresTables(config.targets);
      if (tables.problems.length) throw new ConfigError(tables.problems);
      configWarnings = [...configWarnings, ...tables.warnings];
      tablesCreated = tables.created;
    }
    environments =
      config.role === 'worker'
        ? []
        : loadEnvironments(config, { warn: (message, fields) => keyWarnings.push([message, fields]) });
    // The merchant's key and the inquiry functions, for the workers' inquiries about overdue expectations.
    apiEnvironments = config.role === 'receiver' ? [] : loadApiEnvironments(config, process.env);
    const inquiries = await inquiryFunctionProblems(apiEnvironments);
    if (inquiries.length) throw new ConfigError(inquiries);
    redis = createRedisConnector(config);
    tracingSettings(process.env);
    applyRoleV8Settings(config.role === 'worker');
  } catch (err) {
    if (err instanceof ServiceError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(exitCodeOf(err));
    }
    throw err;
  }
  const logger = createLogger(config.logLevel, undefined, { repeatIntervalMs: config.logRepeatIntervalMs });
  for (const [message, fields] of keyWarnings) logger.warn(message, fields);
  for (const warning of configWarnings) logger.warn('configuration', { warning });
  for (const created of tablesCreated) logger.info('postgres destination', { created });
  for (const typo of mistypedEnv(process.env)) logger.warn('environment variable ignored: not a setting', typo);
  // Before anything that receives or delivers, so the first notification is traced too.
  const tracing = await startTracing(process.env, (key, message, fields) =>
    logger.repeated('warn', key, message, fields),
  );
  if (tracing)
    logger.info('tracing', {
      endpoint: maskedEndpoint(tracing.settings.endpoint),
      protocol: tracing.settings.protocol,
    });
  const metrics = createMetrics(undefined, true, { exemplars: tracing !== undefined });
  logger.info('redis', {
    topology: redis.target.kind,
    at: redis.description,
    keyPrefix: keyPrefix(config.queuePrefix),
    minReplicasAck: config.redisMinReplicasAck,
  });
  const service = await startService(config, environments, logger, metrics, redis, process.env, apiEnvironments);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { signal });
    logger.repeated.flush();
    // The receiver's and the workers' bounds, then a margin for the queues: a close that waits on a
    // Redis that does not answer must not keep the process (and its orchestrator) waiting for ever.
    // Leaving is safe: nothing unacknowledged was ever answered 200, and in-flight deliveries are
    // picked up again once their lock expires.
    const boundMs = config.shutdownTimeoutMs + config.worker.shutdownTimeoutMs + SHUTDOWN_MARGIN_MS;
    setTimeout(() => {
      logger.error(
        'shutdown did not finish in time (is Redis reachable?); exiting anyway: in-flight deliveries are picked up ' +
          'again after their lock expires',
        { boundMs },
      );
      process.exit(1);
    }, boundMs).unref();
    service
      .close()
      // What the batch processor still holds goes to the collector before the process leaves.
      .then(() =>
        tracing
          ?.shutdown()
          .catch((err: Error) => logger.warn('tracing: spans not exported at shutdown', { error: err.message })),
      )
      .then(() => {
        logger.info('stopped');
        process.exit(0);
      })
      .catch((err: Error) => {
        logger.error('shutdown failed', { error: err.message });
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // SIGHUP re-reads CONFIG_FILE in this process; a refused file is a log line and the running configuration stays.
  process.on('SIGHUP', () => {
    service.reloader.reload({ principal: 'signal:SIGHUP' }).catch((err: Error) => {
      const problems = (err as { problems?: string[] }).problems;
      logger.error('configuration reload refused; the running configuration stays', {
        error: problems ? undefined : err.message,
        problems,
      });
    });
  });
}

main().catch((err: Error) => {
  process.stderr.write(`fatal: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
