import { createHash, createPublicKey } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { eventDefinition } from '../src/model/event-table';
import { sampleBody } from '../src/signing/samples';
import { signLegacy } from '../src/signing/sign';
import { generateTestKeyPair } from '../src/signing/keypair';
import type { Harness } from './support/harness';
import { FakePlatform } from './support/platform';
import { tempDir } from './support/temp-dir';
import { buildArchiveHarness, notificationCount, queryArchive, type ArchiveHarness } from './support/archive';

/**
 * What the archive keeps: one row per distinct verified notification that was acknowledged (events,
 * duplicates, every quarantine reason), with its exact bytes, headers, scheme, key and outcome; a
 * replay only counts on its row.
 */

const MERCHANT_ID = 'M-ARCHIVE-1';
const production = new FakePlatform();
const partner = generateTestKeyPair();

interface Row extends Record<string, unknown> {
  event_id: string;
  outcome: string;
  reason: string | null;
  scheme: string;
  path: string;
  body: Buffer;
  headers: Record<string, string>;
  key_fingerprint: string;
  environment: string;
  request_id: string | null;
  receipts: number;
  signed_merchant_id: string | null;
}

let a: ArchiveHarness;
let h: Harness;
let url: string;

beforeAll(async () => {
  const configFile = path.join(tempDir('archive-rows'), 'config.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      environments: {
        production: { publicKeys: [production.keys.publicKeyBase64] },
        partner: { publicKeys: [partner.publicKeyBase64], accept: { 'data.merch_id': { $in: ['NOBODY'] } } },
      },
    }),
  );
  a = await buildArchiveHarness('archive_rows', {
    CONFIG_FILE: configFile,
    SIGNATURE_SCHEMES: 'current,legacy',
    MERCHANT_ID,
  });
  ({ h, url } = a);
});

afterAll(() => a.close());

async function rowsOf(eventId: string): Promise<Row[]> {
  return queryArchive<Row>(url, 'SELECT * FROM webhook_archive.notifications WHERE event_id = $1 ORDER BY seq', [
    eventId,
  ]);
}

const settled = () => a.settled();

function fingerprintOf(pem: string): string {
  return createHash('sha256')
    .update(createPublicKey(pem).export({ type: 'spki', format: 'der' }))
    .digest('hex');
}

it('an event leaves one row with its exact bytes, headers, scheme, key, environment and request_id; its key is kept', async () => {
  const n = production.signed('payment.result', { body: `${sampleBody('payment.result')}\r\n` });
  const res = await production.send(h.app, { ...n, headers: { ...n.headers, 'x-merch-id': 'SUB-7' } }).expect(200);
  expect(res.body).toEqual({ ret_code: '000000', ret_msg: 'Success' });
  await settled();
  const rows = await queryArchive<Row>(url, 'SELECT * FROM webhook_archive.notifications');
  expect(rows).toHaveLength(1);
  const row = rows[0]!;
  expect(row.body.equals(n.body)).toBe(true);
  expect(row).toMatchObject({
    outcome: 'accepted',
    reason: null,
    scheme: 'current',
    path: n.target,
    environment: 'production',
    key_fingerprint: fingerprintOf(production.keys.publicKeyPem),
    request_id: (JSON.parse(n.body.toString()) as { data: { request_id: string } }).data.request_id,
    receipts: 1,
  });
  expect(row.headers).toEqual({
    'content-type': 'application/json',
    'x-merch-id': 'SUB-7',
    'x-svc-timestamp': n.headers['x-svc-timestamp'],
    'x-svc-nonce': n.headers['x-svc-nonce'],
    'x-svc-sign': n.headers['x-svc-sign'],
    'x-svc-sign-alg': n.headers['x-svc-sign-alg'],
  });
  const keys = await queryArchive<{ fingerprint: string; pem: string; environment: string }>(
    url,
    'SELECT fingerprint, pem, environment FROM webhook_archive.keys',
  );
  expect(keys).toEqual([
    {
      fingerprint: fingerprintOf(production.keys.publicKeyPem),
      pem: production.keys.publicKeyPem,
      environment: 'production',
    },
  ]);
});

it('a replay (the same nonce) adds no row and counts on the original; a duplicate (new nonce) is a row of its own', async () => {
  const n = production.signed('payment.result');
  await production.send(h.app, n).expect(200);
  await production.send(h.app, n).expect(200);
  await production.send(h.app, n).expect(200);
  const again = production.signed('payment.result', { body: n.body });
  await production.send(h.app, again).expect(200);
  await settled();
  const before = await notificationCount(url);
  const eventId = (
    await queryArchive<{ event_id: string }>(
      url,
      'SELECT event_id FROM webhook_archive.notifications WHERE body = $1 LIMIT 1',
      [n.body],
    )
  )[0]!.event_id;
  const rows = await rowsOf(eventId);
  expect(rows.map((r) => [r.outcome, r.receipts, r.headers['x-svc-nonce']])).toEqual([
    ['accepted', 3, n.headers['x-svc-nonce']],
    ['duplicate', 1, again.headers['x-svc-nonce']],
  ]);
  // Sent again once more: still counted, never a row.
  await production.send(h.app, again).expect(200);
  await settled();
  expect(await notificationCount(url)).toBe(before);
  expect((await rowsOf(eventId)).map((r) => r.receipts)).toEqual([3, 2]);
});

it('a legacy-scheme notification is kept with the merchant id its string signs', async () => {
  const timestamp = Date.now();
  const body = Buffer.from(sampleBody('payment.result', { timestamp }));
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    ...signLegacy(production.keys.privateKeyPem, MERCHANT_ID, timestamp, body),
  };
  const target = eventDefinition('payment.result').path;
  await production.send(h.app, { target, headers, body }).expect(200);
  // The same signature on another notify path: held as signature_reused, a row of its own.
  const other = eventDefinition('fx.result').path;
  await production.send(h.app, { target: other, headers, body }).expect(200);
  await settled();
  const rows = await queryArchive<Row>(
    url,
    "SELECT * FROM webhook_archive.notifications WHERE scheme = 'legacy' ORDER BY seq",
  );
  expect(rows.map((r) => [r.path, r.outcome, r.reason, r.signed_merchant_id])).toEqual([
    [target, 'accepted', null, MERCHANT_ID],
    [other, 'quarantined', 'signature_reused', MERCHANT_ID],
  ]);
  expect(rows[0]!.body.equals(body)).toBe(true);
  expect(rows[0]!.headers).toMatchObject({ signature: headers.signature, type: 'RSA256', version: 'v1.2' });
});

it('each quarantine reason leaves its row: invalid, not UTF-8, and not_accepted (another environment)', async () => {
  const invalid = production.signed('payment.result', { body: '{"type":"MERCH","data":' });
  const notUtf8 = production.signed('payment.result', { body: Buffer.from([0x7b, 0xff, 0xfe, 0x7d]) });
  await production.send(h.app, invalid).expect(200);
  await production.send(h.app, notUtf8).expect(200);
  const partnerPlatform = Object.assign(new FakePlatform(), { keys: partner });
  const foreign = partnerPlatform.signed('payment.result');
  await partnerPlatform.send(h.app, foreign).expect(200);
  await settled();
  const byBody = async (body: Buffer) =>
    (await queryArchive<Row>(url, 'SELECT * FROM webhook_archive.notifications WHERE body = $1', [body])).map((r) => [
      r.outcome,
      r.reason,
      r.environment,
    ]);
  expect(await byBody(invalid.body)).toEqual([['quarantined', 'invalid', 'production']]);
  expect(await byBody(notUtf8.body)).toEqual([['quarantined', 'invalid', 'production']]);
  expect(await byBody(foreign.body)).toEqual([['not_accepted', 'not_accepted', 'partner']]);
  const keys = await queryArchive<{ environment: string }>(
    url,
    'SELECT environment FROM webhook_archive.keys ORDER BY environment',
  );
  expect(keys.map((k) => k.environment)).toEqual(['partner', 'production']);
});

it('a request that does not verify is answered 401 and never archived', async () => {
  const before = await notificationCount(url);
  const n = production.signed('payment.result');
  await production.send(h.app, { ...n, body: Buffer.from(`${n.body.toString()} `) }).expect(401);
  await settled();
  expect(await notificationCount(url)).toBe(before);
});
