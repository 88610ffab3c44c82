import type { PostgresServer } from '../../src/demo/postgres-server';
import type { RedisServer } from './redis-server';

export default async function globalTeardown(): Promise<void> {
  const state = globalThis as { __redis?: RedisServer; __postgres?: PostgresServer };
  await state.__redis?.stop();
  await state.__postgres?.remove();
}
