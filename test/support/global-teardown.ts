import type { RedisServer } from './redis-server';

export default async function globalTeardown(): Promise<void> {
  await (globalThis as { __redis?: RedisServer }).__redis?.stop();
}
