import { readFileSync } from 'node:fs';
import path from 'node:path';
import { runCli } from '../src/cli/run';
import { cliFailure } from '../src/cli/errors';
import { createLogger } from '../src/logging/logger';
import { createMetrics } from '../src/monitoring/metrics';
import { loadEnvironments } from '../src/config/keys';
import { createRedisConnector } from '../src/redis/connect';
import { createPipeline, pipelineOptions, type Pipeline } from '../src/pipeline/pipeline';
import { startReceiver, type RunningReceiver } from '../src/receiver';
import { testConfig, LogCapture } from './support/harness';
import { tempDir } from './support/temp-dir';

const dir = tempDir('keys');
let receiver: RunningReceiver;
let pipeline: Pipeline;
const logs = new LogCapture();

beforeAll(async () => {
  const out: string[] = [];
  expect(await runCli(['keygen', '--dir', dir], { env: {}, out: (l) => out.push(l) })).toBe(0);
  expect(out.join('\n')).toContain(`PLATFORM_PUBLIC_KEYS=file:${path.join(dir, 'platform-public.b64')}`);
  const config = testConfig({
    PLATFORM_PUBLIC_KEYS: `file:${path.join(dir, 'platform-public.b64')}`,
    SIGNATURE_SCHEMES: 'current,legacy',
    MERCHANT_ID: 'M100023',
    PORT: '0',
    HOST: '127.0.0.1',
  });
  pipeline = createPipeline(createRedisConnector(config).open('producer'), pipelineOptions(config));
  receiver = await startReceiver({
    config,
    environments: loadEnvironments(config),
    logger: createLogger('info', logs.stream),
    metrics: createMetrics(),
    pipeline,
  });
});
afterAll(async () => {
  await receiver.close();
  await pipeline.close();
  pipeline.redis.disconnect();
});

async function cli(...argv: string[]) {
  const lines: string[] = [];
  const code = await runCli(argv, { env: {}, out: (l) => lines.push(l) });
  return { code, lines };
}

describe('the merchant test tool against a running receiver', () => {
  const url = () => `http://127.0.0.1:${receiver.port}`;
  const key = () => path.join(dir, 'platform-private.pem');

  it('keygen writes a PKCS#8 private key and the Base64 X.509 public key', () => {
    expect(readFileSync(key(), 'utf8')).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(readFileSync(path.join(dir, 'platform-public.b64'), 'utf8')).toMatch(/^MIIB[A-Za-z0-9+/=]+\n$/);
  });

  it('send all: each of the seven notifications is signed, sent and acknowledged', async () => {
    const { code, lines } = await cli('send', 'all', '--url', url(), '--key', key());
    expect(code).toBe(0);
    expect(lines).toHaveLength(7);
    for (const line of lines)
      expect(line).toMatch(
        / 200 \{"ret_code":"000000","ret_msg":"Success"\}  event evt_[0-9a-f]{40}  request_id REQ\w+$/,
      );
    const accepted = logs.lines.filter((l) => l.outcome === 'accepted');
    expect(accepted).toHaveLength(7);
    // The event id printed is the one the receiver gave each notification.
    expect(lines.map((l) => / event (evt_\w+)/.exec(l)?.[1]).sort()).toEqual(accepted.map((l) => l.eventId).sort());
  });

  it('send --times 2: the second identical request is a replay', async () => {
    const { code } = await cli('send', 'payment.result', '--url', url(), '--key', key(), '--times', '2');
    expect(code).toBe(0);
    expect(logs.lines.filter((l) => l.outcome === 'replay')).toHaveLength(1);
  });

  it('when --times is not a whole number of at least 1, then nothing is sent and the error says why (exit 1)', async () => {
    const received = () => logs.lines.filter((l) => l.message === 'notification received').length;
    const before = received();
    for (const bad of ['0', 'two', '1.5']) {
      const failed = cli('send', 'payment.result', '--url', url(), '--key', key(), '--times', bad);
      await expect(failed).rejects.toThrow(`--times: not a whole number of at least 1: ${bad}`);
      expect(cliFailure(await failed.catch((err: unknown) => err)).exitCode).toBe(1);
    }
    expect(received()).toBe(before);
  });

  it('when the command is trigger (an alias once, never documented), then it is unknown: exit 2 and the usage', async () => {
    const { code, lines } = await cli('trigger', 'payment.result', '--url', url(), '--key', key());
    expect(code).toBe(2);
    expect(lines[0]).toMatch(/^unknown command "trigger"/);
  });

  it('send --scheme legacy signs the v1.2 way', async () => {
    const { code, lines } = await cli(
      'send',
      'remittance.incoming',
      '--scheme',
      'legacy',
      '--merchant-id',
      'M100023',
      '--url',
      url(),
      '--key',
      key(),
    );
    expect(code).toBe(0);
    expect(lines[0]).toMatch(/ 200 /);
    expect(logs.lines.filter((l) => l.outcome === 'accepted' && String(l.nonce).startsWith('sig:'))).toHaveLength(1);
  });

  it('exits non-zero when the receiver refuses', async () => {
    const { code, lines } = await cli(
      'send',
      'payment.result',
      '--scheme',
      'legacy',
      '--merchant-id',
      'SOMEONE-ELSE',
      '--url',
      url(),
      '--key',
      key(),
    );
    expect(code).toBe(1);
    expect(lines[0]).toMatch(/ 401 /);
  });
});
