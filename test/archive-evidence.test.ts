import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { eventDefinition } from '../src/model/event-table';
import { sampleBody } from '../src/signing/samples';
import { signLegacy } from '../src/signing/sign';
import { runCli } from '../src/cli/run';
import { cliFailure } from '../src/cli/errors';
import type { StreamEntry } from '../src/archive/entries';
import { writeBatch } from '../src/archive/write-batch';
import { keyPrefix } from '../src/model/names';
import { FakePlatform } from './support/platform';
import { tempDir } from './support/temp-dir';
import { buildArchiveHarness, notificationCount, queryArchive, type ArchiveHarness } from './support/archive';

/**
 * Evidence for a dispute: `archive export` writes what a third party checks with openssl alone, for
 * either scheme; `archive verify` re-verifies every row and names a row changed or deleted in SQL.
 */

const MERCHANT_ID = 'M-EVIDENCE-1';
const platform = new FakePlatform();
let a: ArchiveHarness;

beforeAll(async () => {
  a = await buildArchiveHarness('archive_evidence', {
    PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
    SIGNATURE_SCHEMES: 'current,legacy',
    MERCHANT_ID,
  });
});
afterAll(() => a.close());

async function cli(...argv: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  // As cli/main.ts does: a command that throws is one line and its exit code.
  const code = await runCli(argv, { env: a.env, out: (l) => lines.push(l), err: (l) => lines.push(l) }).catch(
    (err: unknown) => {
      const { line, exitCode } = cliFailure(err);
      lines.push(line);
      return exitCode;
    },
  );
  return { code, out: lines.join('\n') };
}

/** The one command the export's README gives, run as written in the export's folder. */
function opensslFromReadme(dir: string): string {
  const command = readFileSync(path.join(dir, 'README'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l.startsWith('openssl '));
  expect(command).toBe('openssl dgst -sha256 -verify public-key.pem -signature signature.bin signed.txt');
  const [bin, ...args] = command!.split(' ');
  return execFileSync(bin!, args, { cwd: dir, encoding: 'utf8' });
}

function requestIdOf(body: Buffer): string {
  return (JSON.parse(body.toString()) as { data: { request_id: string } }).data.request_id;
}

let currentEventId: string;
let legacyRequestId: string;

it('exports a current-scheme notification by event id, and a legacy one by request_id, each verified by openssl', async () => {
  const current = platform.signed('payment.result', { body: `${sampleBody('payment.result')}\n` });
  const sent = await platform.send(a.h.app, current).expect(200);
  expect(sent.status).toBe(200);
  const timestamp = Date.now();
  const legacyBody = Buffer.from(sampleBody('settlement.result', { timestamp }));
  await platform
    .send(a.h.app, {
      target: eventDefinition('settlement.result').path,
      headers: {
        'content-type': 'application/json',
        ...signLegacy(platform.keys.privateKeyPem, MERCHANT_ID, timestamp, legacyBody),
      },
      body: legacyBody,
    })
    .expect(200);
  await a.settled();
  const [row] = await queryArchive<{ event_id: string }>(
    a.url,
    'SELECT event_id FROM webhook_archive.notifications WHERE body = $1',
    [current.body],
  );
  currentEventId = row!.event_id;
  legacyRequestId = requestIdOf(legacyBody);

  const currentDir = path.join(tempDir('evidence'), 'current');
  const exported = await cli('archive', 'export', currentEventId, '--out', currentDir);
  expect(exported.code).toBe(0);
  expect(opensslFromReadme(currentDir)).toBe('Verified OK\n');
  expect(readFileSync(path.join(currentDir, 'body')).equals(current.body)).toBe(true);
  expect(readFileSync(path.join(currentDir, 'public-key.pem'), 'utf8')).toBe(platform.keys.publicKeyPem);
  const evidence = JSON.parse(readFileSync(path.join(currentDir, 'evidence.json'), 'utf8')) as Record<string, unknown>;
  expect(evidence).toMatchObject({ eventId: currentEventId, scheme: 'current', outcome: 'accepted', deliveries: [] });

  const legacyDir = path.join(tempDir('evidence'), 'legacy');
  expect((await cli('archive', 'export', legacyRequestId, '--out', legacyDir)).code).toBe(0);
  expect(opensslFromReadme(legacyDir)).toBe('Verified OK\n');
  expect(readFileSync(path.join(legacyDir, 'signed.txt'), 'utf8')).toBe(
    `merchantId=${MERCHANT_ID}&timestamp=${timestamp}&requestBody=${legacyBody.toString()}`,
  );
});

it('an id the archive does not hold is refused, exit 1', async () => {
  const res = await cli('archive', 'export', 'no-such-id', '--out', tempDir('evidence'));
  expect(res.code).toBe(1);
  expect(res.out).toContain('error: nothing in the archive has event id or request_id no-such-id');
});

it('verify passes an untouched archive, then names a row whose body changed by one byte in SQL, and a deleted row', async () => {
  for (let i = 0; i < 4; i++) await platform.send(a.h.app, platform.signed('fx.result')).expect(200);
  await a.settled();
  const clean = await cli('archive', 'verify');
  expect(clean.code).toBe(0);
  expect(clean.out).toMatch(/rows: 6 {2}signatures verified: 6 {2}bad rows: 0/);

  const rows = await queryArchive<{ month: string; seq: string }>(
    a.url,
    "SELECT to_char(month, 'YYYY-MM') AS month, seq FROM webhook_archive.notifications ORDER BY seq",
  );
  const id = (r: { month: string; seq: string }) => `${r.month}/${r.seq}`;
  const changed = rows[2]!;
  await queryArchive(
    a.url,
    `UPDATE webhook_archive.notifications SET body = overlay(body placing '\\x21'::bytea from 3 for 1) WHERE seq = $1`,
    [changed.seq],
  );
  const afterChange = await cli('archive', 'verify');
  expect(afterChange.code).toBe(1);
  expect(afterChange.out).toContain(`${id(changed)}  changed: its facts no longer match its hash`);
  expect(afterChange.out).toContain(`${id(changed)}  its platform signature does not verify`);

  const deleted = rows[4]!;
  await queryArchive(a.url, 'DELETE FROM webhook_archive.notifications WHERE seq = $1', [deleted.seq]);
  const afterDelete = await cli('archive', 'verify');
  expect(afterDelete.code).toBe(1);
  expect(afterDelete.out).toContain(`${id(deleted)}  deleted`);

  // The last row removed too: the month's recorded head still names it.
  const last = rows[rows.length - 1]!;
  await queryArchive(a.url, 'DELETE FROM webhook_archive.notifications WHERE seq = $1', [last.seq]);
  expect((await cli('archive', 'verify')).out).toContain(`${id(last)}  deleted`);
});

/** With the archiver stopped, two notifications acknowledged: their archive stream entries. */
async function twoWaitingEntries(): Promise<StreamEntry[]> {
  await a.stopArchiver();
  const stream = `${keyPrefix(a.h.config.queuePrefix)}:archive`;
  await platform.send(a.h.app, platform.signed('payment.result')).expect(200);
  await platform.send(a.h.app, platform.signed('payment.result')).expect(200);
  const raw = await a.h.redis.xrange(stream, '-', '+');
  const entries: StreamEntry[] = raw.map(([id, list]) => ({
    id,
    fields: Object.fromEntries(list.flatMap((v, i) => (i % 2 === 0 ? [[v, list[i + 1]!]] : []))),
  }));
  expect(entries).toHaveLength(2);
  return entries;
}

/** The chain's head names the newest row, and the one before it the row before. */
async function expectHeadOnNewestRows(): Promise<void> {
  const heads = await queryArchive<{ seq: string }>(a.url, 'SELECT seq FROM webhook_archive.chain_heads');
  const seqs = await queryArchive<{ seq: string }>(
    a.url,
    'SELECT seq FROM webhook_archive.notifications ORDER BY seq DESC LIMIT 2',
  );
  expect(seqs.map((s) => Number(s.seq))).toEqual([Number(heads[0]!.seq), Number(heads[0]!.seq) - 1]);
}

it('an entry written again after a crash (committed, not yet acknowledged) adds no row and keeps the chain whole', async () => {
  const entries = await twoWaitingEntries();
  const before = await notificationCount(a.url);
  // Written as the crashed archiver did, then again by the next one reading the same entries.
  expect((await writeBatch(a.pool, await a.read(entries), new Set())).notifications).toBe(2);
  await a.startArchiver();
  await a.settled();
  expect(await notificationCount(a.url)).toBe(before + 2);
  await expectHeadOnNewestRows();
});

it('two archivers writing the same entries at once link each row into the chain once', async () => {
  // A notification archived first, so that this month's chain has a head to hold.
  await platform.send(a.h.app, platform.signed('payment.result')).expect(200);
  await a.settled();
  const entries = await twoWaitingEntries();
  const before = await notificationCount(a.url);
  // One archiver's claim of another's stale entries can overlap that one's own write of them: both
  // writes are let in while the month's chain head is held, so each has done whatever it does before
  // taking that lock.
  const holder = await a.pool.connect();
  await holder.query('BEGIN');
  expect((await holder.query('SELECT seq FROM webhook_archive.chain_heads FOR UPDATE')).rowCount).toBe(1);
  const writes = Promise.all([
    writeBatch(a.pool, await a.read(entries), new Set()),
    writeBatch(a.pool, await a.read(entries), new Set()),
  ]);
  await new Promise((resolve) => setTimeout(resolve, 500));
  await holder.query('COMMIT');
  holder.release();
  const written = await writes;
  expect(written.map((w) => w.notifications).sort()).toEqual([0, 2]);
  expect(await notificationCount(a.url)).toBe(before + 2);
  await expectHeadOnNewestRows();
  await a.startArchiver();
  await a.settled();
  expect(await notificationCount(a.url)).toBe(before + 2);
  await expectHeadOnNewestRows();
});
