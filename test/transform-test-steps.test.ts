import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { runCli } from '../src/cli/run';
import { testRedisUrl } from './support/harness';
import { tempDir } from './support/temp-dir';

// `transform test` takes a body through the service's steps in the service's order (the schema, the
// environment's accept rule, the target's environments and filter, then its transform) and says
// where they stop, instead of running the transform on a body the service would never send.

const dir = tempDir('transform-steps');
const configFile = path.join(dir, 'config.yaml');
writeFileSync(
  configFile,
  stringify({
    environments: {
      production: { publicKeys: ['file:unread-by-workers.b64'], accept: { 'data.merchant_no': 'M100023' } },
      sandbox: { publicKeys: ['file:unread-by-workers-too.b64'] },
    },
    targets: [
      {
        name: 'fx-desk',
        url: 'http://127.0.0.1:1/fx',
        events: ['payment.result'],
        environments: ['production'],
        filter: { 'data.currency': { $in: ['USD', 'EUR'] } },
        transform: 'function transform(event) { return { amount: event.data.data.amount }; }',
      },
    ],
  }),
);
const env = { CONFIG_FILE: configFile, REDIS_URL: testRedisUrl() };

function bodyFile(name: string, data: Record<string, unknown>): string {
  const file = path.join(dir, name);
  writeFileSync(
    file,
    JSON.stringify({ type: 'MERCH', data: { request_id: 'REQ-1', merchant_no: 'M100023', ...data } }),
  );
  return file;
}

async function transformTest(file: string, ...more: string[]) {
  const out: string[] = [];
  const argv = ['transform', 'test', '--target', 'fx-desk', '--file', file, '--type', 'payment.result', ...more];
  const code = await runCli(argv, { env, out: (l) => out.push(l) });
  return { code, out: out.join('\n') };
}

describe('transform test follows the service', () => {
  it('when the target filters the body out, then it says filtered and prints no request', async () => {
    const { code, out } = await transformTest(bodyFile('gbp.json', { amount: '10.00', currency: 'GBP' }));
    expect(code).toBe(0);
    expect(out).toBe('filtered (its filter leaves this body out); nothing would be sent to fx-desk');
    expect(out).not.toContain('POST');
  });

  it("when the environment's accept rule leaves the body out, then it says not_accepted before any filter", async () => {
    const file = bodyFile('other.json', { merchant_no: 'M999999', currency: 'USD' });
    const { out } = await transformTest(file);
    expect(out).toBe("not_accepted: the production environment's accept rule leaves it out; quarantined, nothing sent");
  });

  it('when the target does not take the environment, then it says so', async () => {
    const { out } = await transformTest(bodyFile('usd.json', { currency: 'USD' }), '--environment', 'sandbox');
    expect(out).toBe('not sent (the target does not take this environment); nothing would be sent to fx-desk');
  });

  it('when every step passes, then it prints the request with the transformed body', async () => {
    const { code, out } = await transformTest(bodyFile('eur.json', { amount: '10.00', currency: 'EUR' }));
    expect(code).toBe(0);
    expect(out).toMatch(/^POST http:\/\/127\.0\.0\.1:1\/fx$/m);
    expect(out.split('\n').at(-1)).toBe('{"amount":"10.00"}');
  });

  it('when the body fails its schema, then it says invalid (quarantined)', async () => {
    const file = path.join(dir, 'broken.json');
    writeFileSync(file, '{"type":');
    const { out } = await transformTest(file);
    expect(out).toMatch(/^invalid: body is not JSON.*; the service quarantines it and sends fx-desk nothing$/);
  });
});
