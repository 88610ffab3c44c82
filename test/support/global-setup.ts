import { PostgresServer } from '../../src/demo/postgres-server';
import { RedisServer } from './redis-server';

/**
 * One throwaway Redis for the suite, unless REDIS_URL names one to use instead, and one throwaway
 * PostgreSQL (test files make their own databases on it: postgres.ts's `freshDatabase`). Tests that
 * stop Redis or PostgreSQL to simulate a fault start their own.
 */
export default async function globalSetup(): Promise<void> {
  const state = globalThis as { __redis?: RedisServer; __postgres?: PostgresServer };
  const postgres = PostgresServer.start();
  if (process.env.REDIS_URL) {
    process.env.TEST_REDIS_URL = process.env.REDIS_URL;
  } else {
    const server = await RedisServer.start();
    state.__redis = server;
    process.env.TEST_REDIS_URL = server.url;
  }
  state.__postgres = await postgres;
  process.env.TEST_PG_URL = state.__postgres.url();
}
