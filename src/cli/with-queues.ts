import type { Redis } from 'ioredis';
import type { Config } from '../config/schema';
import { createOperatorConnection } from '../queue/connection';
import { openServiceQueues, type ServiceQueues } from '../queue/open-queues';

/** Opens every queue for one operator command and always closes them and the connection after. */
export async function withQueues<T>(config: Config, run: (queues: ServiceQueues, redis: Redis) => Promise<T>): Promise<T> {
  const redis = createOperatorConnection(config.redisUrl);
  const queues = openServiceQueues(redis, config.queuePrefix, config.targets);
  try {
    return await run(queues, redis);
  } finally {
    await queues.close();
    redis.disconnect();
  }
}
