export { freePort, RedisServer } from '../../src/demo/redis-server';
