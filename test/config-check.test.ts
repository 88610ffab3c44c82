import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { runCli } from '../src/cli/run';
import { freePort, isRedisReachable } from '../src/demo/redis-server';
import { stopChild } from '../src/demo/stop-child';
import { RedisServer } from './support/redis-server';
import { testRedisUrl, uniquePrefix } from './support/harness';
import { FakePlatform } from './support/platform';
import { tempDir } from './support/temp-dir';

const platform = new FakePlatform();
const other = new FakePlatform();

function writeConfig(config: object): string {
  const file = path.join(tempDir('check'), 'config.yaml');
  writeFileSync(file, stringify(config));
  return file;
}

async function cli(env: Record<string, string>, ...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { env, out: (l) => out.push(l), err: (l) => err.push(l) });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('config check', () => {
  it('when the configuration is valid, then it prints it with secrets masked and warns about risky settings', async () => {
    const file = writeConfig({
      adminToken: 'admin-token-0123456789abcdef',
      signatureSchemes: ['current', 'legacy'],
      merchantId: 'M100023',
      targets: [
        {
          name: 'ledger',
          url: 'http://ledger.internal.example/hooks',
          allowInsecure: true,
          events: ['payment.result'],
          secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
          headers: { Authorization: 'Bearer internal-token-xyz' },
        },
      ],
    });
    const { code, out } = await cli(
      { PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64, CONFIG_FILE: file, REDIS_URL: testRedisUrl() },
      'config',
      'check',
    );

    expect(code).toBe(0);
    expect(out).toContain(
      `configuration is valid; Redis ${testRedisUrl()} (REDIS_URL), queue prefix whr (default), config file ${file}`,
    );
    for (const secret of ['admin-token-0123456789abcdef', 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'internal-token-xyz'])
      expect(out).not.toContain(secret);
    expect(out).toMatch(/^ {2}adminToken: "\*\*\*"$/m);
    expect(out).toMatch(/^ +Authorization: "\*\*\*"$/m);
    expect(out).toMatch(/^ {2}merchantId: M100023$/m);
    expect(out).toMatch(/no target subscribes to onboarding\.result, .*fx\.result:/);
    expect(out).not.toMatch(/no target subscribes to [^:]*payment\.result/);
    expect(out).toContain('target ledger uses http:// (http://ledger.internal.example/hooks)');
    expect(out).toContain('the legacy v1.2 signature scheme is on');
    // The suite's Redis keeps nothing on disk (and does not evict):
    expect(out).toContain(`Redis at ${testRedisUrl()} has no persistence (appendonly no, no save points)`);
    expect(out).not.toContain('maxmemory-policy');
    expect(out).toContain('environment production has neither an accept rule nor a secret CALLBACK_BASE_PATH');
    expect(out).toMatch(/^5 warnings:$/m);
  });

  it("when production has an accept rule or a secret callback path, then it does not warn about other merchants' notifications", async () => {
    const warned = (out: string) => out.includes('has neither an accept rule nor a secret CALLBACK_BASE_PATH');
    const env = {
      CONFIG_FILE: writeConfig({
        environments: {
          production: { publicKeys: [platform.keys.publicKeyBase64], accept: { 'data.merchant_no': 'M100023' } },
          sandbox: { publicKeys: [other.keys.publicKeyBase64] },
        },
      }),
      REDIS_URL: testRedisUrl(),
    };
    expect(warned((await cli(env, 'config', 'check')).out)).toBe(false);
    const secretPath = {
      PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
      CALLBACK_BASE_PATH: '/hooks/k7Q2x9Lm4Rt8Vw3Z',
      REDIS_URL: testRedisUrl(),
    };
    expect(warned((await cli(secretPath, 'config', 'check')).out)).toBe(false);
    const guessable = {
      PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
      CALLBACK_BASE_PATH: '/hooks/platform',
      REDIS_URL: testRedisUrl(),
    };
    expect(warned((await cli(guessable, 'config', 'check')).out)).toBe(true);
  });

  it('when an accept rule tests merchantId (the unsigned X-Merch-Id under the current scheme), then it warns naming the environment and what to test instead', async () => {
    const unsigned = (accept: object) =>
      cli(
        {
          CONFIG_FILE: writeConfig({
            environments: { production: { publicKeys: [platform.keys.publicKeyBase64], accept } },
          }),
          REDIS_URL: testRedisUrl(),
        },
        'config',
        'check',
      ).then(({ out }) => out);
    const warning =
      "environment production's accept rule tests merchantId, which under the current signature scheme is the unsigned X-Merch-Id header";
    expect(await unsigned({ merchantId: 'SUB-1' })).toContain(warning);
    expect(await unsigned({ $or: [{ 'data.merchant_no': 'M100023' }, { merchantId: { $in: ['SUB-1'] } }] })).toContain(
      'test a field of the signed body instead (e.g. { "data.merchant_no": { $in: [M100023] } })',
    );
    expect(await unsigned({ 'data.merchant_no': 'M100023' })).not.toContain(warning);
  });

  it('when Redis snapshots but has no AOF and evicts, then it says both, its password masked', async () => {
    const redis = await RedisServer.start();
    try {
      const { Redis } = await import('ioredis');
      const admin = new Redis(redis.url);
      await admin.call('CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lru');
      await admin.call('CONFIG', 'SET', 'save', '3600 1000000');
      await admin.call('CONFIG', 'SET', 'requirepass', 'redis-pass-123');
      admin.disconnect();
      const file = writeConfig({
        adminToken: 'admin-token-0123456789abcdef',
        targets: [
          {
            name: 'all',
            url: 'https://erp.example/hooks',
            events: ['*'],
            secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
          },
        ],
      });
      const url = redis.url.replace('redis://', 'redis://:redis-pass-123@');
      const { code, out } = await cli({ ROLE: 'worker', CONFIG_FILE: file, REDIS_URL: url }, 'config', 'check');
      expect(code).toBe(0);
      const masked = redis.url.replace('redis://', 'redis://:***@');
      expect(out).not.toContain('redis-pass-123');
      expect(out).toContain(`configuration is valid; Redis ${masked} (REDIS_URL)`);
      expect(out).toContain(`Redis at ${masked} does not use AOF (appendonly no, snapshots: save 3600 1000000)`);
      expect(out).toContain(`Redis at ${masked} has maxmemory-policy allkeys-lru: when memory is full it deletes keys`);
      expect(out).toMatch(/^2 warnings:$/m);
    } finally {
      await redis.stop();
    }
  });

  it('when Redis disables CONFIG (as managed Redis does), then it asks INFO instead', async () => {
    const port = await freePort();
    const child: ChildProcess = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--maxmemory-policy',
        'volatile-lru',
        '--rename-command',
        'CONFIG',
        '',
      ],
      { stdio: 'ignore' },
    );
    try {
      const url = `redis://127.0.0.1:${port}`;
      while (!(await isRedisReachable(url))) await new Promise((r) => setTimeout(r, 50));
      const { out } = await cli({ ROLE: 'worker', REDIS_URL: url }, 'config', 'check');
      expect(out).toContain(`Redis at ${url} does not use AOF (appendonly no)`);
      expect(out).toContain(`Redis at ${url} has maxmemory-policy volatile-lru`);
    } finally {
      await stopChild(child);
    }
  });

  it('when Redis cannot be reached, then it says it could not ask', async () => {
    const url = `redis://127.0.0.1:${await freePort()}`;
    const { code, out } = await cli({ ROLE: 'worker', REDIS_URL: url }, 'config', 'check');
    expect(code).toBe(0);
    expect(out).toContain(`could not ask Redis at ${url} about persistence and eviction`);
  });

  it('when a variable looks like a mistyped setting, then it is a warning naming the setting meant, and the default stays', async () => {
    const url = `redis://127.0.0.1:${await freePort()}`;
    const { code, out } = await cli(
      { ROLE: 'worker', REDIS_URL: url, LOG_LEVL: 'debug', HOME: '/root', REDIS_PORT: 'tcp://10.0.0.5:6379' },
      'config',
      'check',
    );
    expect(code).toBe(0);
    expect(out).toMatch(/^ {2}logLevel: info$/m);
    expect(out).toContain('  - environment variable LOG_LEVL is not a setting and is ignored; did you mean LOG_LEVEL?');
    expect(out).not.toMatch(/variable (HOME|REDIS_PORT)/);
  });

  it('when the configuration is invalid, then it fails with the problems', async () => {
    const file = writeConfig({ targts: [] });
    await expect(cli({ ROLE: 'worker', CONFIG_FILE: file }, 'config', 'check')).rejects.toThrow(
      `unknown setting targts (did you mean targets?) (in ${file})`,
    );
  });

  it('when a target header value holds CR/LF, NUL or another control character, or a name is no token, then it is refused at load, naming the header', async () => {
    const target = (headers: Record<string, string>) => ({
      targets: [{ name: 'ledger', url: 'http://127.0.0.1:9/hooks', events: ['payment.result'], headers }],
    });
    const refusal = /a header value may not hold CR, LF, NUL or other control characters/;
    for (const value of ['Bearer x\r\nX-Injected: 1', 'Bearer x\nY', 'a\u0000b', 'a\u001b[2Jb', 'a\u0085b']) {
      const file = writeConfig(target({ Authorization: value }));
      await expect(cli({ ROLE: 'worker', CONFIG_FILE: file }, 'config', 'check')).rejects.toThrow(refusal);
    }
    await expect(
      cli({ ROLE: 'worker', CONFIG_FILE: writeConfig(target({ 'X-Bad Name': 'v' })) }, 'config', 'check'),
    ).rejects.toThrow(/a header name is letters, digits/);
    await expect(
      cli({ ROLE: 'worker', CONFIG_FILE: writeConfig(target({ Authorization: 'Bearer\tx é' })) }, 'config', 'check'),
    ).resolves.toMatchObject({ code: 0 });
  });
});

describe('operator commands', () => {
  it('when none of CONFIG_FILE, REDIS_* or QUEUE_PREFIX is set, then they refuse with exit 2 and name them', async () => {
    const { code, err } = await cli({ PATH: '/usr/bin' }, 'queues');
    expect(code).toBe(2);
    expect(err).toMatch(
      /^error: .*none of CONFIG_FILE, the REDIS_\* settings \(REDIS_URL, …\) or QUEUE_PREFIX is set.*--defaults/,
    );
  });

  it('then each says which Redis, prefix and config file it uses', async () => {
    const prefix = uniquePrefix();
    const { code, err } = await cli({ REDIS_URL: testRedisUrl(), QUEUE_PREFIX: prefix }, 'target', 'list');
    expect(code).toBe(0);
    expect(err).toBe(
      `using Redis ${testRedisUrl()} (REDIS_URL), queue prefix ${prefix} (QUEUE_PREFIX), config file none`,
    );
  });

  describe('credentials and plain http', () => {
    const checked = async (config: object, env: Record<string, string> = {}) =>
      (
        await cli(
          {
            PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
            CONFIG_FILE: writeConfig(config),
            REDIS_URL: testRedisUrl(),
            ...env,
          },
          'config',
          'check',
        )
      ).out;
    const target = {
      name: 'ledger',
      events: ['payment.result'],
      url: 'https://ledger.example/hooks',
      secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    };

    it('when ADMIN_TOKEN is missing, then it says the admin API answers 503 until one is set', async () => {
      const out = await checked({ targets: [target] });
      expect(out).toContain('  - no ADMIN_TOKEN: the admin API and its protected routes answer 503 until one is set');
      expect(await checked({ adminToken: 'admin-token-0123456789abcdef', targets: [target] })).not.toContain(
        'no ADMIN_TOKEN',
      );
    });

    it("when the env example's placeholders are left in place, then it names each one", async () => {
      const out = await checked(
        { targets: [target] },
        {
          ADMIN_TOKEN: 'change-me-to-32-random-characters',
          ADMIN_USER: 'ops',
          ADMIN_PASSWORD: 'change-me-please',
          GRAFANA_ADMIN_PASSWORD: 'change-me-too',
        },
      );
      for (const name of ['ADMIN_TOKEN', 'ADMIN_PASSWORD', 'GRAFANA_ADMIN_PASSWORD'])
        expect(out).toContain(`  - ${name} is still the env example's placeholder: set a long random value`);
      const filled = await checked(
        { targets: [target] },
        { ADMIN_TOKEN: 'a3f9c0de41b27785aa01', GRAFANA_ADMIN_PASSWORD: 'k2LmQ9xr8Vw3Zt7p' },
      );
      expect(filled).not.toContain('placeholder');
    });

    it('when a target has no secret, then it says its requests carry no signature', async () => {
      const { secret: _none, ...unsigned } = target;
      const out = await checked({ adminToken: 'admin-token-0123456789abcdef', targets: [unsigned] });
      expect(out).toContain('  - target ledger has no secret: its requests carry no webhook-signature');
      expect(await checked({ targets: [target] })).not.toContain('has no secret');
    });

    it('when a target uses http:// to this host, then it does not warn (the docs allow it); to another host it does', async () => {
      const loopback = ['http://127.0.0.1:4000/hooks', 'http://localhost:4000/hooks', 'http://[::1]:4000/hooks'];
      const out = await checked({ targets: loopback.map((url, i) => ({ ...target, name: `local${i}`, url })) });
      expect(out).not.toContain('uses http://');
      const remote = await checked({ targets: [{ ...target, url: 'http://10.0.0.7/hooks', allowInsecure: true }] });
      expect(remote).toContain('  - target ledger uses http:// (http://10.0.0.7/hooks)');
    });
  });
});
