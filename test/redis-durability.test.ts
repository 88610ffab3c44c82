import { runCli } from '../src/cli/run';
import { FakePlatform } from './support/platform';
import { scrapedValue } from './support/metric-value';
import { RedisServer } from './support/redis-server';
import { ServiceProcess } from './support/service-process';
import { uniquePrefix } from './support/harness';

jest.setTimeout(60000);

const ADMIN_TOKEN = 'durability-test-admin-token';

describe('one durability verdict for /metrics, /readyz and config check', () => {
  let redis: RedisServer;
  let service: ServiceProcess | undefined;
  beforeAll(async () => {
    // A Redis that persists nothing (no AOF, no save points) and refuses CONFIG, as managed Redis does.
    redis = await RedisServer.start({ args: ['--rename-command', 'CONFIG', ''] });
  });
  afterAll(async () => {
    await service?.kill('SIGTERM');
    await redis.stop();
  });

  it('when Redis persists nothing and refuses CONFIG, then /metrics, /readyz and config check all say no_persistence', async () => {
    const env = { REDIS_URL: redis.url, QUEUE_PREFIX: uniquePrefix() };
    service = await ServiceProcess.startQuiet({
      ...env,
      PLATFORM_PUBLIC_KEYS: new FakePlatform().keys.publicKeyBase64,
      ADMIN_TOKEN,
    });
    const admin = `http://127.0.0.1:${service.adminPort}`;
    // The service judges Redis once it is connected: wait for the series.
    let text = '';
    for (const deadline = Date.now() + 15000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
      const res = await fetch(`${admin}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      text = await res.text();
      if (scrapedValue(text, 'webhook_redis_durability_risk', { risk: 'no_persistence' }) !== undefined) break;
    }
    expect(scrapedValue(text, 'webhook_redis_durability_risk', { risk: 'no_persistence' })).toBe(1);
    expect(scrapedValue(text, 'webhook_redis_durability_risk', { risk: 'eviction_policy' })).toBe(0);
    expect(await (await fetch(`${admin}/readyz`)).json()).toEqual({
      status: 'ready',
      redis: 'up',
      durabilityRisks: ['no_persistence'],
    });

    const out: string[] = [];
    const code = await runCli(['config', 'check'], {
      env: { ...env, ROLE: 'worker' },
      out: (l) => out.push(l),
      err: (l) => out.push(l),
    });
    expect(code).toBe(0);
    expect(out.join('\n')).toContain(
      `Redis at ${redis.url} does not use AOF (appendonly no) and will not say whether it snapshots (CONFIG refused): unless your provider keeps snapshots, a restart loses every queued notification`,
    );
    expect(out.join('\n')).not.toContain('maxmemory-policy');
  });
});
