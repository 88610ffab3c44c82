import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadPlatformKeys } from '../src/config/keys';
import { ConfigError } from '../src/config/errors';
import { DEFAULTS_FILE, loadConfig } from '../src/config/load';
import { EVENT_TYPES } from '../src/model/event-table';
import { createRedisConnector } from '../src/redis/connect';
import { redisTarget } from '../src/config/redis-target';
import { loadVectors } from './support/vectors';
import { tempDir } from './support/temp-dir';

const { keys } = loadVectors();
const base = { PLATFORM_PUBLIC_KEYS: keys.platform_key_a_spki_base64 };

function writeYaml(text: string): string {
  const file = path.join(tempDir('cfg'), 'config.yaml');
  writeFileSync(file, text);
  return file;
}

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('when only the keys are given, then every default from config/default.yaml applies', () => {
    const c = loadConfig(base);
    expect(c).toMatchObject({
      port: 8080,
      signatureHeaderPrefix: 'x-svc',
      signatureSchemes: ['current'],
      timestampToleranceMs: 300000,
      callbackBasePath: '',
      enqueueTimeoutMs: 3000,
      dedupWindowMs: 7 * 24 * 3600 * 1000,
      bodyLimitBytes: 262144,
      maxConnections: 1024,
      logLevel: 'info',
    });
  });

  it('when environment variables are set, then they override the file and the defaults', () => {
    const dir = tempDir('cfg');
    const file = path.join(dir, 'c.yaml');
    writeFileSync(file, 'port: 7000\nqueuePrefix: fromfile\nlogLevel: warn\n');
    const c = loadConfig({
      ...base,
      CONFIG_FILE: file,
      PORT: '7001',
      SIGNATURE_SCHEMES: 'current,legacy',
      MERCHANT_ID: 'M1',
      SIGNATURE_HEADER_PREFIX: 'X-ACME',
    });
    expect(c).toMatchObject({
      port: 7001,
      queuePrefix: 'fromfile',
      logLevel: 'warn',
      signatureSchemes: ['current', 'legacy'],
      signatureHeaderPrefix: 'x-acme',
    });
  });

  it('when environment variables are invalid, then every problem is named by its variable', () => {
    const problems = problemsOf(() =>
      loadConfig({
        PORT: 'eighty',
        SIGNATURE_SCHEMES: 'legacy',
        CALLBACK_BASE_PATH: 'hooks/',
        TIMESTAMP_TOLERANCE_MS: '10',
      }),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^PORT: .*expected number/),
        expect.stringMatching(/^CALLBACK_BASE_PATH: empty, or a path/),
        expect.stringMatching(/^TIMESTAMP_TOLERANCE_MS:/),
      ]),
    );
  });

  it('when a file key is invalid, then the problem names the key and the file', () => {
    const file = writeYaml('port: eighty\nworker: { lockDurationMs: 10 }\n');
    expect(problemsOf(() => loadConfig({ ...base, CONFIG_FILE: file }))).toEqual([
      `port: Invalid input: expected number, received string (in ${file})`,
      `worker.lockDurationMs: Too small: expected number to be >=1000 (in ${file})`,
    ]);
  });

  it('when the config file has unknown keys, then each is named with the nearest valid setting, at any depth', () => {
    const file = writeYaml(
      [
        'targts: []',
        'REDIS_URL: redis://127.0.0.1:1',
        'worker: { lockDurationMS: 30000 }',
        'frobnicate: 1',
        'targets:',
        '  - { name: crm, url: "http://127.0.0.1:1/x", events: ["*"], timout_ms: 5, backoff: { initalMs: 4, maxMs: 5 }, headers: { X-Any-Header: ok } }',
      ].join('\n'),
    );
    expect(problemsOf(() => loadConfig({ ...base, CONFIG_FILE: file }))).toEqual([
      `targets.0.backoff.initialMs: missing (expected number) (in ${file})`,
      `targets.0.backoff: unknown setting initalMs (did you mean initialMs?) (in ${file})`,
      `targets.0: unknown setting timout_ms (did you mean timeoutMs?) (in ${file})`,
      `worker: unknown setting lockDurationMS (did you mean lockDurationMs?) (in ${file})`,
      `unknown settings targts (did you mean targets?), REDIS_URL (did you mean redisUrl?), frobnicate (in ${file})`,
    ]);
  });

  it('when an unknown key sits in a destination or an environment, then it is named there; one in the defaults names that file', () => {
    const file = writeYaml(
      [
        'platformPublicKeys: []',
        'environments:',
        `  sandbox: { publicKeys: [${JSON.stringify(keys.platform_key_a_spki_base64)}], merchnatId: M1 }`,
        'targets:',
        '  - name: bus',
        '    events: ["*"]',
        '    environments: [sandbox]',
        '    destination: { type: nats, servers: ["nats://127.0.0.1:4222"], subject: hooks, tsl: {} }',
      ].join('\n'),
    );
    expect(problemsOf(() => loadConfig({ CONFIG_FILE: file }))).toEqual([
      `environments.sandbox: unknown setting merchnatId (did you mean merchantId?) (in ${file})`,
      `targets.0.destination: unknown setting tsl (did you mean tls?) (in ${file})`,
    ]);

    const defaults = path.join(tempDir('cfg'), 'default.yaml');
    writeFileSync(defaults, `${readFileSync(DEFAULTS_FILE, 'utf8')}\nlogLevle: info\n`);
    expect(problemsOf(() => loadConfig(base, defaults))).toEqual([
      `unknown setting logLevle (did you mean logLevel?) (in ${defaults})`,
    ]);
  });

  it('when a target names an unknown event type, then the problem suggests the nearest and lists the valid ones', () => {
    const file = writeYaml('targets:\n  - { name: crm, url: "http://127.0.0.1:1/x", events: [payment.reslt] }\n');
    const [problem] = problemsOf(() => loadConfig({ ...base, CONFIG_FILE: file }));
    expect(problem).toMatch(
      /^targets\.0\.events\.0: unknown event type "payment\.reslt"; did you mean payment\.result\? Valid: onboarding\.result, .*payment\.result, or "\*" for all \(in /,
    );
    for (const type of EVENT_TYPES) expect(problem).toContain(type);
  });

  it('when the receiver runs without platform keys, then it says they are required', () => {
    expect(problemsOf(() => loadConfig({}))).toEqual([
      'platformPublicKeys: at least one platform public key is required (PLATFORM_PUBLIC_KEYS)',
    ]);
    expect(loadConfig({ ROLE: 'worker' }).role).toBe('worker');
  });

  it('when a target is invalid, then the problem names the target field', () => {
    const dir = tempDir('cfg');
    const file = path.join(dir, 'targets.yaml');
    writeFileSync(
      file,
      'targets:\n  - { name: Ledger, url: "ftp://x", events: [payment.done], secret: "abc" }\n  - { name: crm, url: "http://127.0.0.1:1/x", events: ["*"] }\n',
    );
    const problems = problemsOf(() => loadConfig({ ...base, CONFIG_FILE: file }));
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^targets\.0\.name:/),
        expect.stringMatching(/^targets\.0\.url:/),
        expect.stringMatching(/^targets\.0\.events\.0:/),
        expect.stringMatching(/^targets\.0\.secret: must be whsec_/),
      ]),
    );
    const okFile = path.join(dir, 'ok.yaml');
    writeFileSync(okFile, 'targets:\n  - { name: crm, url: "http://127.0.0.1:1/x", events: ["*"] }\n');
    expect(loadConfig({ ...base, CONFIG_FILE: okFile }).targets).toEqual([
      expect.objectContaining({
        name: 'crm',
        timeoutMs: 10000,
        maxAttempts: 12,
        concurrency: 10,
        format: 'standard',
        backoff: { initialMs: 1000, maxMs: 3600000 },
      }),
    ]);
  });

  it('when the legacy scheme is enabled without a merchant id, then it says MERCHANT_ID is required', () => {
    expect(problemsOf(() => loadConfig({ ...base, SIGNATURE_SCHEMES: 'current,legacy' }))).toEqual([
      'merchantId: MERCHANT_ID is required when the legacy scheme is enabled',
    ]);
  });
});

describe('loadPlatformKeys', () => {
  it('reads Base64 DER, PEM, certificates, and files holding them', () => {
    const dir = tempDir('keys');
    const file = path.join(dir, 'platform.pem');
    writeFileSync(file, keys.platform_key_a_certificate_pem + keys.platform_key_a_pem);
    const loaded = loadPlatformKeys([
      keys.platform_key_a_spki_base64,
      keys.platform_key_b_spki_base64,
      keys.platform_key_a_pem.replace(/\n/g, '\\n'),
      `file:${file}`,
    ]);
    expect(loaded).toHaveLength(5);
    expect(loaded.every((k) => k.asymmetricKeyType === 'rsa')).toBe(true);
  });

  it('when a key is malformed, then start-up stops with a message naming it', () => {
    const problems = problemsOf(() =>
      loadPlatformKeys(['MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAsxDW', 'not a key!', 'file:/nonexistent.pem']),
    );
    expect(problems).toEqual([
      expect.stringMatching(/^platformPublicKeys\[0\]: not a valid Base64 X\.509 public key/),
      expect.stringMatching(/^platformPublicKeys\[1\]: neither PEM nor Base64/),
      expect.stringMatching(/^\/nonexistent\.pem: cannot read/),
    ]);
  });
});

describe('Redis topology settings', () => {
  it('when nothing names a topology, then REDIS_URL is the single Redis, its credentials and TLS from the URL', () => {
    const target = redisTarget(loadConfig({ ...base, REDIS_URL: 'rediss://app:s%40cret@cache.internal:6380/2' }));
    expect(target).toMatchObject({
      kind: 'single',
      node: { host: 'cache.internal', port: 6380 },
      db: 2,
      username: 'app',
      password: 's@cret',
      tls: true,
    });
    expect(target.description).toBe('rediss://app:***@cache.internal:6380/2');
  });

  it('when REDIS_USERNAME and REDIS_PASSWORD are set, then they win over the URL', () => {
    const target = redisTarget(
      loadConfig({
        ...base,
        REDIS_URL: 'redis://old:pw@127.0.0.1:6379',
        REDIS_USERNAME: 'svc',
        REDIS_PASSWORD: 'new-secret',
      }),
    );
    expect(target).toMatchObject({ kind: 'single', username: 'svc', password: 'new-secret', tls: false });
  });

  it('when sentinels are set, then the master is found through them', () => {
    const c = loadConfig({
      ...base,
      REDIS_SENTINELS: '10.0.0.1:26379, [::1]:26380',
      REDIS_SENTINEL_MASTER: 'whr',
      REDIS_SENTINEL_PASSWORD: 'sentinel-pw',
      REDIS_TLS: 'true',
    });
    expect(redisTarget(c)).toMatchObject({
      kind: 'sentinel',
      sentinels: [
        { host: '10.0.0.1', port: 26379 },
        { host: '::1', port: 26380 },
      ],
      masterName: 'whr',
      sentinelPassword: 'sentinel-pw',
      tls: true,
      description: 'sentinel master "whr" via 10.0.0.1:26379,[::1]:26380 (TLS)',
    });
  });

  it('when cluster nodes are set in the file, then the cluster is used and REDIS_MIN_REPLICAS_ACK is read', () => {
    const dir = tempDir('cfg');
    const file = path.join(dir, 'c.yaml');
    writeFileSync(file, 'redisClusterNodes: ["127.0.0.1:7000", "127.0.0.1:7001"]\nredisMinReplicasAck: 1\n');
    const c = loadConfig({ ...base, CONFIG_FILE: file });
    expect(c.redisMinReplicasAck).toBe(1);
    expect(redisTarget(c)).toMatchObject({
      kind: 'cluster',
      nodes: [
        { host: '127.0.0.1', port: 7000 },
        { host: '127.0.0.1', port: 7001 },
      ],
      tls: false,
    });
    expect(loadConfig(base).redisMinReplicasAck).toBe(0);
  });

  it('when two topologies or half a setting pair are given, then start-up stops naming the settings', () => {
    expect(
      problemsOf(() =>
        loadConfig({ ...base, REDIS_SENTINELS: 'a:1', REDIS_SENTINEL_MASTER: 'm', REDIS_CLUSTER_NODES: 'b:2' }),
      ),
    ).toEqual([
      'REDIS_CLUSTER_NODES: set at most one of REDIS_SENTINELS (redisSentinels) and REDIS_CLUSTER_NODES (redisClusterNodes)',
    ]);
    expect(problemsOf(() => loadConfig({ ...base, REDIS_SENTINELS: 'a:1' }))).toEqual([
      'redisSentinelMaster: REDIS_SENTINEL_MASTER (redisSentinelMaster) is required with REDIS_SENTINELS',
    ]);
    expect(
      problemsOf(() =>
        loadConfig({ ...base, REDIS_CLUSTER_NODES: 'a', REDIS_TLS_CERT_FILE: '/c.pem', REDIS_MIN_REPLICAS_ACK: '-1' }),
      ),
    ).toEqual(
      expect.arrayContaining([
        'REDIS_CLUSTER_NODES[0]: must be host:port',
        expect.stringMatching(/^REDIS_MIN_REPLICAS_ACK: /),
        'redisTlsKeyFile: REDIS_TLS_CERT_FILE and REDIS_TLS_KEY_FILE go together',
      ]),
    );
  });

  it('when a TLS file cannot be read, then the connector refuses to start naming the setting', () => {
    const c = loadConfig({ ...base, REDIS_CLUSTER_NODES: '127.0.0.1:7000', REDIS_TLS_CA_FILE: '/nonexistent/ca.pem' });
    expect(problemsOf(() => createRedisConnector(c))).toEqual([
      expect.stringMatching(/^redisTlsCaFile \(REDIS_TLS_CA_FILE\): cannot read \/nonexistent\/ca\.pem/),
    ]);
  });
});
