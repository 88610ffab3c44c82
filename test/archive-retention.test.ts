import { keyPrefix } from '../src/model/names';
import type { StreamEntry } from '../src/archive/entries';
import { writeBatch } from '../src/archive/write-batch';
import { dropMonthsBefore } from '../src/archive/partitions';
import { verifyArchive } from '../src/archive/verify';
import { FakePlatform } from './support/platform';
import { buildArchiveHarness, queryArchive, type ArchiveHarness } from './support/archive';

/**
 * Retention without scanning a table: a month wholly older than the cut-off is dropped as a partition,
 * its chain's head kept as a cut, and what remains still verifies.
 */

const platform = new FakePlatform();
let a: ArchiveHarness;

beforeAll(async () => {
  a = await buildArchiveHarness('archive_retention', { PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64 });
});
afterAll(() => a.close());

function monthStart(monthsAgo: number): Date {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - monthsAgo, 1));
}

it('drops whole months older than the cut-off, keeps the rest, and the archive still verifies', async () => {
  await a.stopArchiver();
  await platform.send(a.h.app, platform.signed('payment.result')).expect(200);
  const [entry] = await a.h.redis.xrange(`${keyPrefix(a.h.config.queuePrefix)}:archive`, '-', '+');
  const [id, list] = entry!;
  const fields = Object.fromEntries(list.flatMap((v, i) => (i % 2 === 0 ? [[v, list[i + 1]!]] : []))) as Record<
    string,
    string
  >;
  // The same notification as if received three months ago (the receipt time is not signed).
  const old = JSON.parse(fields.r!) as { receivedAt: string };
  old.receivedAt = new Date(monthStart(3).getTime() + 3_600_000).toISOString();
  const entries: StreamEntry[] = [
    { id: '1-0', fields: { ...fields, r: JSON.stringify(old) } },
    { id, fields },
  ];
  expect((await writeBatch(a.pool, await a.read(entries), new Set())).notifications).toBe(2);
  const partitions = () =>
    queryArchive<{ name: string }>(
      a.url,
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'notifications' ORDER BY 1`,
    ).then((rows) => rows.map((r) => r.name));
  expect(await partitions()).toHaveLength(2);

  const dropped = await dropMonthsBefore(a.pool, monthStart(0), new Set());
  expect(dropped).toEqual([monthStart(3).toISOString().slice(0, 10)]);
  expect(await partitions()).toEqual([`notifications_${monthStart(0).toISOString().slice(0, 7).replace('-', '_')}`]);
  const left = await queryArchive<{ received_at: Date }>(
    a.url,
    'SELECT received_at FROM webhook_archive.notifications',
  );
  expect(left.map((r) => r.received_at.getTime() >= monthStart(0).getTime())).toEqual([true]);
  const cuts = await queryArchive<{ month: string; seq: string }>(
    a.url,
    "SELECT to_char(month, 'YYYY-MM-DD') AS month, seq FROM webhook_archive.chain_cuts",
  );
  expect(cuts).toEqual([{ month: monthStart(3).toISOString().slice(0, 10), seq: '1' }]);

  const report = await verifyArchive(a.pool);
  expect(report).toMatchObject({ months: 1, rows: 1, signaturesVerified: 1, monthsCut: 1, bad: [] });
});
