import path from 'node:path';
import { runCli } from '../src/cli/run';
import { formatSummary, summarise } from '../src/listen/summary';
import { tempDir } from './support/temp-dir';

async function keygen(dir: string): Promise<string> {
  const out: string[] = [];
  expect(await runCli(['keygen', '--dir', dir], { env: {}, out: (l) => out.push(l) })).toBe(0);
  return out.join('\n');
}

describe('keygen says where its key goes', () => {
  it('when the folder names a sandbox, then it suggests an environment of its own, never PLATFORM_PUBLIC_KEYS', async () => {
    const dir = path.join(tempDir('keygen'), '.keys-sandbox');
    const out = await keygen(dir);
    expect(out).not.toContain('PLATFORM_PUBLIC_KEYS=');
    expect(out).toContain(`environments: { sandbox: { publicKeys: [file:${path.join(dir, 'platform-public.b64')}] } }`);
  });

  it('otherwise it suggests PLATFORM_PUBLIC_KEYS', async () => {
    const dir = path.join(tempDir('keygen'), '.keys');
    expect(await keygen(dir)).toContain(`PLATFORM_PUBLIC_KEYS=file:${path.join(dir, 'platform-public.b64')}`);
  });
});

describe('listen names what it cannot type', () => {
  const at = new Date('2026-11-27T00:00:00.000Z');
  it('a transformed body (no envelope, no forwarded path) is "(transformed body)", with its request_id', () => {
    const s = summarise(Buffer.from('{"paymentId":"P1","request_id":"R1"}'), { 'webhook-id': 'evt_1' });
    expect(formatSummary(at, s)).toBe(`${at.toISOString()}  ${'(transformed body)'.padEnd(26)}  evt_1  request_id=R1`);
  });

  it('the standard envelope keeps its type', () => {
    const body = '{"id":"evt_2","type":"payment.result","timestamp":"t","data":{"status":"SUCCESS"}}';
    expect(formatSummary(at, summarise(Buffer.from(body), { 'webhook-id': 'evt_2' }))).toContain(
      'payment.result              evt_2  status=SUCCESS',
    );
  });
});
