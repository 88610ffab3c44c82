import { createHash, createPublicKey } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { sampleBody } from '../src/signing/samples';
import { keyPrefix, ownKeys } from '../src/model/names';
import { createKeyPublisher } from '../src/pipeline/archive-keys';
import { runCli } from '../src/cli/run';
import { FakePlatform } from './support/platform';
import { tempDir } from './support/temp-dir';
import {
  buildArchiveHarness,
  notificationCount,
  queryArchive,
  waitForCount,
  type ArchiveHarness,
} from './support/archive';

/**
 * An archive entry names the key that verified it by fingerprint and carries the body once (in the job
 * data beside its record); the key's PEM reaches the archive through the key registry in Redis. No
 * row is ever written without its key, and entries written the older way (PEM, body and headers in
 * the record) are still archived.
 */

const platform = new FakePlatform();
let a: ArchiveHarness;
let prefix: string;
const fingerprint = createHash('sha256')
  .update(createPublicKey(platform.keys.publicKeyPem).export({ type: 'spki', format: 'der' }))
  .digest('hex');

beforeAll(async () => {
  a = await buildArchiveHarness('archive_key_registry', { PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64 });
  prefix = keyPrefix(a.h.config.queuePrefix);
});
afterAll(() => a.close());

/** The archive stream's entries, each as a field map. */
async function streamEntries(): Promise<{ id: string; fields: Record<string, string> }[]> {
  const raw = await a.h.redis.xrange(ownKeys.archive(prefix), '-', '+');
  return raw.map(([id, list]) => ({
    id,
    fields: Object.fromEntries(list.flatMap((v, i) => (i % 2 === 0 ? [[v, list[i + 1]!]] : []))),
  }));
}

const bodiesArchived = () =>
  queryArchive<{ body: Buffer }>(a.url, 'SELECT body FROM webhook_archive.notifications ORDER BY seq').then((rows) =>
    rows.map((r) => r.body.toString()),
  );

it('an entry whose key the registry lost is not written until the key is published again, then written once with it', async () => {
  await a.stopArchiver();
  const n = platform.signed('payment.result');
  await platform.send(a.h.app, n).expect(200);

  const [entry] = await streamEntries();
  const record = JSON.parse(entry!.fields.r!) as Record<string, unknown>;
  // The record names the key; the PEM is in the registry, the body in the job data beside the record.
  expect(record.keyFingerprint).toBe(fingerprint);
  expect(record).not.toHaveProperty('keyPem');
  expect(record).not.toHaveProperty('body');
  expect((JSON.parse(entry!.fields.b!) as { rawBody: string }).rawBody).toBe(n.body.toString());
  expect(await a.h.redis.hget(ownKeys.archiveKeys(prefix), fingerprint)).toBe(platform.keys.publicKeyPem);

  // The registry lost it (a Redis that lost its data, say) and the archive has never seen this key.
  await a.h.redis.del(ownKeys.archiveKeys(prefix));
  await a.startArchiver();
  await new Promise((r) => setTimeout(r, 1500));
  expect(await notificationCount(a.url)).toBe(0);
  expect(await a.h.redis.xlen(ownKeys.archive(prefix))).toBe(1);

  // Published again (as the producer does within a minute): the waiting batch is written, key and all.
  await a.h.redis.hset(ownKeys.archiveKeys(prefix), fingerprint, platform.keys.publicKeyPem);
  expect(await waitForCount(() => notificationCount(a.url), 1)).toBe(1);
  await a.settled();
  expect(await bodiesArchived()).toEqual([n.body.toString()]);
  const keys = await queryArchive<{ fingerprint: string; pem: string }>(
    a.url,
    'SELECT fingerprint, pem FROM webhook_archive.keys',
  );
  expect(keys).toEqual([{ fingerprint, pem: platform.keys.publicKeyPem }]);
});

it('a key the archive already holds needs no registry: its rows are written and its last use moves on', async () => {
  await a.h.redis.del(ownKeys.archiveKeys(prefix));
  await a.stopArchiver(); // a new archiver, which has not read the registry before
  await a.startArchiver();
  const before = await queryArchive<{ last_used: Date }>(a.url, 'SELECT last_used FROM webhook_archive.keys');
  // The producer published the key within the last minute, so it does not publish it again now.
  await platform.send(a.h.app, platform.signed('payment.result')).expect(200);
  expect(await a.h.redis.hget(ownKeys.archiveKeys(prefix), fingerprint)).toBeNull();
  await a.settled();
  expect(await notificationCount(a.url)).toBe(2);
  const after = await queryArchive<{ last_used: Date }>(a.url, 'SELECT last_used FROM webhook_archive.keys');
  expect(after[0]!.last_used.getTime()).toBeGreaterThan(before[0]!.last_used.getTime());
});

it('an entry written the older way (PEM, body and headers in the record) is archived as before', async () => {
  await a.stopArchiver();
  const n = platform.signed('payment.result');
  await platform.send(a.h.app, n).expect(200);
  const [entry] = await streamEntries();
  const { r, b, ...rest } = entry!.fields;
  const job = JSON.parse(b!) as { signatureHeaders: Record<string, string>; contentType?: string };
  const older = {
    ...(JSON.parse(r!) as Record<string, unknown>),
    keyPem: platform.keys.publicKeyPem,
    body: n.body.toString('base64'),
    headers: { ...job.signatureHeaders, 'content-type': job.contentType },
  };
  await a.h.redis.del(ownKeys.archive(prefix), ownKeys.archiveKeys(prefix));
  await a.h.redis.xadd(ownKeys.archive(prefix), '*', ...Object.entries({ ...rest, r: JSON.stringify(older) }).flat());
  await a.startArchiver();
  await a.settled();
  const rows = await queryArchive<{ body: Buffer; headers: Record<string, string>; key_fingerprint: string }>(
    a.url,
    'SELECT body, headers, key_fingerprint FROM webhook_archive.notifications ORDER BY seq DESC LIMIT 1',
  );
  expect(rows[0]!.body.equals(n.body)).toBe(true);
  expect(rows[0]!.headers).toEqual(older.headers);
  expect(rows[0]!.key_fingerprint).toBe(fingerprint);
  // Its signature verifies from the stored bytes and the key the older entry carried.
  const lines: string[] = [];
  const code = await runCli(['archive', 'verify'], {
    env: a.env,
    out: (l) => lines.push(l),
    err: (l) => lines.push(l),
  });
  const rowCount = await notificationCount(a.url);
  expect([code, lines.join('\n')]).toEqual([
    0,
    expect.stringContaining(`rows: ${rowCount}  signatures verified: ${rowCount}  bad rows: 0`),
  ]);
});

it('the producer publishes a key again once a minute has passed, not before', async () => {
  const key = ownKeys.archiveKeys(prefix);
  let now = 1_000_000;
  const publish = createKeyPublisher(a.h.redis, prefix, () => now);
  await a.h.redis.del(key);
  publish('f1', 'PEM-1');
  await a.h.redis.ping(); // after the HSET on the same connection
  expect(await a.h.redis.hget(key, 'f1')).toBe('PEM-1');
  await a.h.redis.del(key);
  now += 59_000;
  publish('f1', 'PEM-1');
  await a.h.redis.ping();
  expect(await a.h.redis.hget(key, 'f1')).toBeNull();
  now += 1_000;
  publish('f1', 'PEM-1');
  await a.h.redis.ping();
  expect(await a.h.redis.hget(key, 'f1')).toBe('PEM-1');
  await a.h.redis.del(key);
});

describe('with targets, the first of them ordered', () => {
  let t: ArchiveHarness;
  beforeAll(async () => {
    const configFile = path.join(tempDir('archive-key-registry'), 'config.json');
    const target = (name: string, extra = {}) => ({ name, url: 'http://127.0.0.1:9/hook', events: ['*'], ...extra });
    writeFileSync(
      configFile,
      JSON.stringify({ targets: [target('ledger', { order: { key: 'data.request_id' } }), target('crm')] }),
    );
    t = await buildArchiveHarness('archive_key_registry_ordered', {
      PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
      CONFIG_FILE: configFile,
    });
  });
  afterAll(() => t.close());

  it("the entry's body and headers come from the ordered delivery job's data, and the row holds the exact bytes", async () => {
    await t.stopArchiver();
    const n = platform.signed('payment.result', { body: `${sampleBody('payment.result')}\n` });
    await platform.send(t.h.app, n).expect(200);
    const stream = ownKeys.archive(keyPrefix(t.h.config.queuePrefix));
    const fields = (await t.h.redis.xrange(stream, '-', '+'))[0]![1];
    const job = JSON.parse(fields[fields.indexOf('b') + 1]!) as { target: string; orderKey: string; rawBody: string };
    expect(job).toMatchObject({ target: 'ledger', rawBody: n.body.toString() });
    expect(job.orderKey).toBeDefined();
    await t.startArchiver();
    await t.settled();
    const rows = await queryArchive<{ body: Buffer; headers: Record<string, string> }>(
      t.url,
      'SELECT body, headers FROM webhook_archive.notifications',
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.body.equals(n.body)).toBe(true);
    for (const [name, value] of Object.entries(n.headers)) {
      if (name.toLowerCase().startsWith('x-')) expect(rows[0]!.headers[name.toLowerCase()]).toBe(value);
    }
  });
});
