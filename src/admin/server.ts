import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Config } from '../config/schema';
import type { Logger } from '../logging/logger';
import type { Reloader } from '../operations/reload';
import type { Pipeline } from '../pipeline/pipeline';
import { wireAdmin } from './wiring';
import type { OpenArchive } from '../archive/open';

const CONNECTIONS_CHECKING_INTERVAL_MS = 1000;

export interface RunningAdmin {
  server: Server;
  port: number;
  close(): Promise<void>;
}

/** Starts the admin listener on its own port (ADMIN_PORT), apart from the public notify port. */
export async function startAdmin(
  config: Config,
  pipeline: Pipeline,
  logger: Logger,
  registry: Registry,
  reloader?: Reloader,
  archive?: OpenArchive,
): Promise<RunningAdmin> {
  const app = wireAdmin(config, pipeline, registry, logger, reloader, archive);
  const server = createServer(
    {
      requestTimeout: config.admin.requestTimeoutMs,
      headersTimeout: config.admin.headersTimeoutMs,
      keepAliveTimeout: config.admin.keepAliveTimeoutMs,
      // Node looks for connections past these timeouts only every 30 s unless told.
      connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS,
    },
    app,
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.adminPort, config.adminHost, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  logger.info('admin listening', { port, host: config.adminHost });
  return {
    server,
    port,
    async close() {
      server.closeIdleConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
