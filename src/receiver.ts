import type { RequestListener, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sourceCidrsOf } from './config/environments';
import type { PlatformEnvironment } from './config/keys';
import type { Config } from './config/schema';
import { createApp } from './http/app';
import { createPublicServer } from './http/public-server';
import { createSourceAllowlist } from './model/subnets';
import { BodyBudget } from './http/body-budget';
import { gateConnections } from './http/connection-gate';
import type { Logger } from './logging/logger';
import { createMasker } from './logging/mask';
import type { Metrics } from './monitoring/metrics';
import type { Pipeline } from './pipeline/pipeline';
import { createSignatureCheck } from './signature/check';
import { expectedNotifications } from './reconciliation/arrivals';
import { createExpectationStore } from './reconciliation/store';

export interface RunningReceiver {
  server: Server;
  port: number;
  /** Stops accepting and lets in-flight requests finish; the pipeline is the entry point's to close. */
  close(): Promise<void>;
}

export interface ReceiverDeps {
  config: Config;
  /** The platform's environments with their keys (`loadEnvironments`). */
  environments: readonly PlatformEnvironment[];
  logger: Logger;
  metrics: Metrics;
  /** The process's queues; notifications are queued through it. */
  pipeline: Pipeline;
  clock?: () => number;
}

/** Wires the public app from configuration; listens nowhere. */
export function buildReceiverApp({
  config,
  environments,
  logger,
  metrics,
  clock = Date.now,
  pipeline,
}: ReceiverDeps): RequestListener {
  const verifierOptions = {
    environments,
    headerPrefix: config.signatureHeaderPrefix,
    schemes: config.signatureSchemes,
    toleranceMs: config.timestampToleranceMs,
  };
  const byName = new Map(environments.map((e) => [e.name, e]));
  metrics.environments([...byName.keys()]);
  const sourceCidrs = sourceCidrsOf(config);
  return createApp({
    signature: createSignatureCheck(verifierOptions),
    ingest: pipeline,
    clock,
    logger,
    metrics,
    mask: createMasker(config.sensitiveFields),
    basePath: config.callbackBasePath,
    bodyLimitBytes: config.bodyLimitBytes,
    environment: (name) => byName.get(name),
    sourceAllowed: sourceCidrs.length > 0 ? createSourceAllowlist(sourceCidrs) : undefined,
    trustProxy: config.trustProxy,
    bodyBudget: new BodyBudget(config.unverifiedBodyBudgetBytes),
    expectations: expectedNotifications(
      createExpectationStore(pipeline.redis, pipeline.prefix, { archive: pipeline.options.archive === true }),
      config.expectations,
      metrics,
      logger,
      clock,
    ),
  });
}

/** Wires the public receiver from configuration and starts listening. */
export async function startReceiver(deps: ReceiverDeps): Promise<RunningReceiver> {
  const { config, logger } = deps;
  const app = buildReceiverApp(deps);
  const server = createPublicServer(
    app,
    {
      requestTimeoutMs: config.http.requestTimeoutMs,
      headersTimeoutMs: config.http.headersTimeoutMs,
      keepAliveTimeoutMs: config.http.keepAliveTimeoutMs,
      maxConnections: config.maxConnections,
      bodyLimitBytes: config.bodyLimitBytes,
    },
    logger,
    deps.metrics,
  );
  // Judged on accept only when the peer is the sender: behind a trusted proxy every peer is the proxy.
  const sourceCidrs = sourceCidrsOf(config);
  if (config.trustProxy === undefined) {
    gateConnections(
      server,
      {
        maxPerSource: config.maxConnectionsPerSource,
        sourceAllowed: sourceCidrs.length > 0 ? createSourceAllowlist(sourceCidrs) : undefined,
      },
      logger,
      deps.metrics,
    );
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  logger.info('receiver listening', {
    port,
    basePath: config.callbackBasePath || '/',
    environments: Object.fromEntries(
      deps.environments.map((e) => [
        e.name,
        {
          keys: e.keys.length,
          ...(e.sourceAllowed ? { sourceCidrs: true } : {}),
          ...(e.accept ? { accept: true } : {}),
        },
      ]),
    ),
    schemes: config.signatureSchemes,
    sourceAllowlist: sourceCidrs.length > 0 ? sourceCidrs : 'off',
    ...(config.trustProxy !== undefined ? { trustProxy: config.trustProxy } : {}),
  });

  return {
    server,
    port,
    async close() {
      await closeServer(server, config.shutdownTimeoutMs);
    },
  };
}

async function closeServer(server: Server, timeoutMs: number): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const timer = setTimeout(() => server.closeAllConnections(), timeoutMs);
  await closed;
  clearTimeout(timer);
}
