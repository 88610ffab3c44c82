import type { Express } from 'express';
import { writeFileSync, mkdirSync } from 'node:fs';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { stringify } from 'yaml';
import { wireAdmin } from '../src/admin/wiring';
import { runCli } from '../src/cli/run';
import { startWorkers, type RunningWorkers } from '../src/forwarding/workers';
import { createLogger } from '../src/logging/logger';
import { ADMIN_TEST_TOKEN } from './support/forwarding-harness';
import { buildHarness, testRedisUrl, type Harness } from './support/harness';
import { TargetServer } from './support/target-server';
import { tempDir } from './support/temp-dir';

// The accept rule exactly as docs/signatures.md shows it, in a configuration that has nothing else.
const DOCUMENTED_ACCEPT = { 'data.merchant_no': { $in: ['M100023'] } };

const dir = tempDir('accept-example');
let h: Harness;
let workers: RunningWorkers;
let ledger: TargetServer;
const servers: Server[] = [];
let configFile: string;

async function listen(app: RequestListener | Express): Promise<string> {
  const server = createServer(app).listen(0, '127.0.0.1');
  servers.push(server);
  await new Promise((r) => server.once('listening', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function cli(env: Record<string, string>, ...argv: string[]) {
  const out: string[] = [];
  const code = await runCli(argv, { env, out: (l) => out.push(l), err: () => undefined });
  return { code, out: out.join('\n') };
}

let receiverUrl: string;
let adminUrl: string;

beforeAll(async () => {
  const keys = path.join(dir, 'keys');
  expect((await cli({}, 'keygen', '--dir', keys)).code).toBe(0);
  ledger = await TargetServer.start();
  configFile = path.join(dir, 'config.yaml');
  writeFileSync(
    configFile,
    stringify({
      environments: {
        production: { publicKeys: [`file:${path.join(keys, 'platform-public.b64')}`], accept: DOCUMENTED_ACCEPT },
      },
      targets: [{ name: 'ledger', url: ledger.url, events: ['payment.result'] }],
    }),
  );
  h = buildHarness({ CONFIG_FILE: configFile, ADMIN_TOKEN: ADMIN_TEST_TOKEN });
  workers = startWorkers(h.config, h.pipeline, createLogger('error'), h.metrics, h.connector);
  receiverUrl = await listen(h.app);
  adminUrl = await listen(wireAdmin(h.config, h.pipeline, h.metrics.registry, createLogger('error')));
});
afterAll(async () => {
  for (const s of servers) s.close();
  await workers.close();
  await h.close();
  await ledger.close();
});

describe('the documented accept example, from a clean configuration', () => {
  it('config check shows which samples the rule accepts, and which bodies of a folder it leaves out', async () => {
    const bodies = path.join(dir, 'bodies');
    mkdirSync(bodies);
    writeFileSync(
      path.join(bodies, 'payment.result-other.json'),
      JSON.stringify({ type: 'MERCH', data: { request_id: 'R1', merchant_no: 'M999999', amount: '1.00' } }),
    );
    writeFileSync(
      path.join(bodies, 'payment.result-merch-id.json'),
      JSON.stringify({ type: 'MERCH', data: { request_id: 'R2', merch_id: 'M100023', amount: '1.00' } }),
    );
    const env = { CONFIG_FILE: configFile, REDIS_URL: testRedisUrl(), QUEUE_PREFIX: h.config.queuePrefix };

    const { code, out } = await cli(env, 'config', 'check', '--bodies', bodies);

    expect(code).toBe(0);
    // The samples name their merchant in data.merchant_no, so the documented rule accepts them all.
    expect(out).toContain('  production payment.result sample: accepted\n    ledger: delivered');
    expect(out).toContain('  production fx.result sample: accepted (no target takes its type)');
    expect(out).not.toMatch(/sample: not_accepted/);
    // A real body naming its merchant elsewhere, or another merchant, is left out: config check says so.
    expect(out).toContain(
      "  production payment.result payment.result-other.json: not_accepted (the production environment's accept rule",
    );
    expect(out).toContain('  production payment.result payment.result-merch-id.json: not_accepted (the production');
  });

  it('send --set data.merchant_no reports routed for ours and quarantined: not_accepted for another merchant', async () => {
    const key = path.join(dir, 'keys', 'platform-private.pem');
    const env = { ADMIN_TOKEN: ADMIN_TEST_TOKEN };
    const send = (merchant: string) =>
      cli(
        env,
        'send',
        'payment.result',
        '--url',
        receiverUrl,
        '--key',
        key,
        '--admin',
        adminUrl,
        '--set',
        `data.merchant_no=${merchant}`,
      );

    const ours = await send('M100023');
    expect(ours.code).toBe(0);
    expect(ours.out).toMatch(/^payment\.result +200 \{"ret_code":"000000","ret_msg":"Success"\}  event \S+/m);
    expect(ours.out).toMatch(/^ +routed: ledger (waiting|active|delivered)$/m);

    const theirs = await send('M999999');
    expect(theirs.code).toBe(0);
    expect(theirs.out).toMatch(
      /^ +quarantined: not_accepted \(does not match the production environment's acceptance rule\)$/m,
    );
    await ledger.waitFor(() => ledger.successes().length === 1);
    expect(JSON.parse(ledger.requests[0]!.body.toString()).data.data.merchant_no).toBe('M100023');
  });

  it('send --set refuses a path that is not a field', async () => {
    await expect(
      cli(
        {},
        'send',
        'payment.result',
        '--url',
        receiverUrl,
        '--key',
        path.join(dir, 'keys', 'platform-private.pem'),
        '--set',
        '__proto__.x=1',
      ),
    ).rejects.toThrow('--set: "__proto__.x" is not a field path');
  });
});
