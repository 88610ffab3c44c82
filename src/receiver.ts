import type { KeyObject } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import type { Config } from './config/schema';
import { createApp } from './http/app';
import { createPublicServer } from './http/public-server';
import { createSourceAllowlist } from './http/source-allowlist';
import { BodyBudget } from './http/body-budget';
import { gateConnections } from './http/connection-gate';
import type { Logger } from './logging/logger';
import { createMasker } from './logging/mask';
import type { Metrics } from './monitoring/metrics';
import type { Pipeline } from './pipeline/pipeline';
import { createSignatureCheck } from './signature/check';

export interface RunningReceiver {
  server: Server;
  port: number;
  /** Stops accepting and lets in-flight requests finish; the pipeline is the entry point's to close. */
  close(): Promise<void>;
}

export interface ReceiverDeps {
  config: Config;
  keys: readonly KeyObject[];
  logger: Logger;
  metrics: Metrics;
  /** The process's queues; notifications are queued through it. */
  pipeline: Pipeline;
  clock?: () => number;
}

/** Wires the public app from configuration; listens nowhere. */
export function buildReceiverApp({ config, keys, logger, metrics, clock = Date.now, pipeline }: ReceiverDeps): Express {
  const verifierOptions = {
    keys,
    headerPrefix: config.signatureHeaderPrefix,
    appId: config.platformAppId,
    merchantId: config.merchantId,
    schemes: config.signatureSchemes,
    toleranceMs: config.timestampToleranceMs,
  };
  return createApp({
    signature: createSignatureCheck(verifierOptions),
    ingest: pipeline,
    clock,
    logger,
    metrics,
    mask: createMasker(config.sensitiveFields),
    basePath: config.callbackBasePath,
    bodyLimitBytes: config.bodyLimitBytes,
    sourceAllowed: config.platformSourceCidrs.length > 0 ? createSourceAllowlist(config.platformSourceCidrs) : undefined,
    trustProxy: config.trustProxy,
    bodyBudget: new BodyBudget(config.unverifiedBodyBudgetBytes),
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
  if (config.trustProxy === undefined) {
    gateConnections(server, {
      maxPerSource: config.maxConnectionsPerSource,
      sourceAllowed: config.platformSourceCidrs.length > 0 ? createSourceAllowlist(config.platformSourceCidrs) : undefined,
    }, logger, deps.metrics);
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  logger.info('receiver listening', {
    port,
    basePath: config.callbackBasePath || '/',
    keys: deps.keys.length,
    schemes: config.signatureSchemes,
    sourceAllowlist: config.platformSourceCidrs.length > 0 ? config.platformSourceCidrs : 'off',
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
