import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '../config/schema';
import { closeQueues, openDeliveryQueues } from '../forwarding/delivery-queues';
import type { Logger } from '../logging/logger';
import { createProducerConnection } from '../queue/connection';
import { createDeadLetters } from '../operations/dead-letters';
import { createAdminApp } from './app';

export interface RunningAdmin {
  server: Server;
  port: number;
  close(): Promise<void>;
}

/** Starts the admin listener on its own port (ADMIN_PORT), apart from the public notify port. */
export async function startAdmin(config: Config, logger: Logger): Promise<RunningAdmin> {
  const connection = createProducerConnection(config.redisUrl);
  connection.on('error', (err) => logger.warn('redis connection error', { role: 'admin', error: err.message }));
  const deliveryQueues = openDeliveryQueues(connection, config.queuePrefix, config.targets);
  const app = createAdminApp({
    credentials: { token: config.adminToken, user: config.adminUser, password: config.adminPassword },
    deadLetters: createDeadLetters(deliveryQueues),
    logger,
  });
  const server = createServer(app);
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
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await closeQueues(deliveryQueues);
      connection.disconnect();
    },
  };
}
