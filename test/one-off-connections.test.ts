import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { RedisServer } from './support/redis-server';

const ROOT = path.resolve(__dirname, '..');

// A process that asked a Redis once (the suite's global setup, the demo) must be free to exit when
// its work is done: ioredis's disconnect() of a socket that had already closed used to leave a 2 s
// timer behind, which jest reports as "did not exit one second after the test run has completed".
describe('one-off Redis connections leave nothing behind', () => {
  it('a process that probes a refused port, then starts and stops a throwaway redis-server, exits within a second of its work', async () => {
    const script = `
      const { isRedisReachable, RedisServer } = require('./src/demo/redis-server');
      (async () => {
        if (await isRedisReachable('redis://127.0.0.1:9')) throw new Error('port 9 answered');
        const s = await RedisServer.start();
        await s.stop();
        process.stdout.write(String(Date.now()));
      })();`;
    const run = spawnSync(process.execPath, ['-r', 'ts-node/register', '-e', script], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, TS_NODE_SWC: 'true' },
    });
    const ended = Date.now();
    expect(run.status).toBe(0);
    const workDone = Number(run.stdout);
    expect(workDone).toBeGreaterThan(0);
    expect(ended - workDone).toBeLessThan(1000);
  });

  it("a CLI-style connection of the service's connector to a Redis that is down exits within a second of giving up", () => {
    const script = `
      const { createRedisConnector } = require('./src/redis/connect');
      const { loadConfig } = require('./src/config/load');
      (async () => {
        const config = loadConfig({ REDIS_URL: 'redis://127.0.0.1:9', ROLE: 'worker' });
        const redis = createRedisConnector(config).open('operator');
        redis.on('error', () => undefined);
        await redis.ping().then(() => { throw new Error('port 9 answered'); }, () => undefined);
        redis.disconnect();
        process.stdout.write(String(Date.now()));
      })();`;
    const run = spawnSync(process.execPath, ['-r', 'ts-node/register', '-e', script], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, TS_NODE_SWC: 'true' },
    });
    const ended = Date.now();
    expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
    expect(ended - Number(run.stdout)).toBeLessThan(1000);
  });

  it('still reaches a running Redis', async () => {
    const server = await RedisServer.start();
    try {
      const { isRedisReachable } = await import('../src/demo/redis-server');
      expect(await isRedisReachable(server.url)).toBe(true);
    } finally {
      await server.stop();
    }
  });
});
