import type { KeyObject } from 'node:crypto';
import { startAdmin, type RunningAdmin } from './admin/server';
import type { Config } from './config/schema';
import { startWorkers, type RunningWorkers } from './forwarding/workers';
import type { Logger } from './logging/logger';
import type { Metrics } from './monitoring/metrics';
import { startReceiver, type RunningReceiver } from './receiver';

export interface RunningService {
  receiver?: RunningReceiver;
  workers?: RunningWorkers;
  admin: RunningAdmin;
  close(): Promise<void>;
}

/**
 * Starts what ROLE asks for: the receiver, the workers, or both (the default); every process also
 * has the admin listener. Several receivers and workers on different machines can share one Redis.
 */
export async function startService(config: Config, keys: readonly KeyObject[], logger: Logger, metrics: Metrics): Promise<RunningService> {
  const receiver = config.role !== 'worker' ? await startReceiver({ config, keys, logger, metrics }) : undefined;
  const workers = config.role !== 'receiver' ? startWorkers(config, logger, metrics) : undefined;
  const admin = await startAdmin(config, logger, metrics.registry);
  return {
    receiver,
    workers,
    admin,
    async close() {
      // Stop taking notifications first, then let deliveries finish, then the admin port.
      await receiver?.close();
      await workers?.close();
      await admin.close();
    },
  };
}
