export { freePort, RedisServer } from '../../src/devtools/redis-server';
