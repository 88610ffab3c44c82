import { RedisServer } from './redis-server';

/**
 * One throwaway Redis for the suite, unless REDIS_URL names one to use instead. Tests that stop
 * Redis to simulate a fault start their own.
 */
export default async function globalSetup(): Promise<void> {
  if (process.env.REDIS_URL) {
    process.env.TEST_REDIS_URL = process.env.REDIS_URL;
    return;
  }
  const server = await RedisServer.start();
  (globalThis as { __redis?: RedisServer }).__redis = server;
  process.env.TEST_REDIS_URL = server.url;
}
