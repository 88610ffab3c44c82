import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadApiEnvironments } from '../src/config/api-environments';
import { ConfigError } from '../src/config/errors';
import { loadConfig } from '../src/config/load';
import { inquiryFunctionProblems } from '../src/reconciliation/functions';
import { generateTestKeyPair } from '../src/signing/keypair';
import { FakePlatform } from './support/platform';
import { tempDir } from './support/temp-dir';

const platform = new FakePlatform();
const merchant = generateTestKeyPair();
const dir = tempDir('reconciliation-config');

function configWith(api: Record<string, unknown>, environment: Record<string, unknown> = { appId: 'app-1' }) {
  const file = path.join(dir, `config-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(
    file,
    JSON.stringify({
      environments: { production: { publicKeys: [platform.keys.publicKeyBase64], ...environment, api } },
    }),
  );
  return loadConfig({ CONFIG_FILE: file });
}

const settled = "function settled(r) { return r.data.status === 'SUCCESS'; }";

describe('the inquiry settings', () => {
  it('read the merchant key from the environment variable named, never from the configuration itself', () => {
    expect(() => configWith({ baseUrl: 'https://api.example', privateKey: merchant.privateKeyPem })).toThrow(
      /privateKey: file:<path> or env:<VARIABLE>/,
    );
    const config = configWith({ baseUrl: 'https://api.example', privateKey: 'env:KEY', inquiry: {} });
    expect(() => loadApiEnvironments(config, {})).toThrow(
      /environments\.production\.api\.privateKey: .*KEY is not set/,
    );
    const [loaded] = loadApiEnvironments(config, { KEY: merchant.privateKeyPem });
    expect(loaded).toMatchObject({ name: 'production', appId: 'app-1', baseUrl: 'https://api.example' });
  });

  it('refuse a key that is not a private key, without printing it', () => {
    const config = configWith({ baseUrl: 'https://api.example', privateKey: 'env:KEY' });
    let error: unknown;
    try {
      loadApiEnvironments(config, { KEY: 'c2VjcmV0LW5vdC1hLWtleQ==' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain('not a PKCS#8 private key');
    expect((error as Error).message).not.toContain('c2VjcmV0');
  });

  it('need an app id for x-svc-appid', () => {
    const config = configWith({ baseUrl: 'https://api.example', privateKey: 'env:KEY' }, {});
    expect(() => loadApiEnvironments(config, { KEY: merchant.privateKeyPem })).toThrow(/needs the environment's appId/);
  });

  it('name an inquiry function that does not compile, or does not define its name', async () => {
    const config = configWith({
      baseUrl: 'https://api.example',
      privateKey: 'env:KEY',
      inquiry: {
        'payment.result': { settled: 'function settled(r) { return r.data.status === ; }' },
        'fx.result': { settled: 'function final(r) { return true; }' },
        'payee.result': { settled },
      },
    });
    const problems = await inquiryFunctionProblems(loadApiEnvironments(config, { KEY: merchant.privateKeyPem }));
    expect(problems).toEqual([
      expect.stringMatching(/^environments\.production\.api\.inquiry\.payment\.result\.settled: does not compile/),
      'environments.production.api.inquiry.fx.result.settled: defines no settled',
    ]);
  });
});
