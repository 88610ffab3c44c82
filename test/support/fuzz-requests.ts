import { createHash, sign, type KeyObject } from 'node:crypto';
import fc from 'fast-check';
import { EVENT_TABLE } from '../../src/model/event-table';
import { currentStringToSign } from '../../src/signature/verify-current';
import { legacyStringToSign } from '../../src/signature/verify-legacy';
import { MERCHANT_ID, NOW_MS } from './signed-request';

/** A request as it would arrive: target as sent, headers as Node hands them over (lower-case names). */
export interface Wire {
  method: string;
  target: string;
  headers: Record<string, string>;
  body: Buffer;
}

/** A genuine request plus what the test knows about it. */
export interface Genuine {
  scheme: 'current' | 'legacy';
  wire: Wire;
  /** The same request signed by a key the receiver does not trust. */
  foreign: Wire;
  /** The replay key the verifier must give, computed here independently. */
  replayKey: string;
  timestamp: number;
  /** The Base64 signature (not URL-encoded). */
  signature: string;
  /** The environment of the key that signed it (`environments[key]`), when the pool was given names. */
  environment?: string;
}

export const TOLERANCE_MS = 300_000;
const PATHS = EVENT_TABLE.map((e) => e.path);
const NONCE_CHARS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_';

const nonce = fc.string({ unit: fc.constantFrom(...NONCE_CHARS), minLength: 10, maxLength: 100 });
const offset = fc.integer({ min: -TOLERANCE_MS + 1, max: TOLERANCE_MS - 1 });
const queryPart = fc.stringMatching(/^[a-z]{1,6}=[A-Za-z0-9%._-]{0,12}$/);
const target = fc
  .record({ path: fc.constantFrom(...PATHS), query: fc.array(queryPart, { maxLength: 3 }) })
  .map(({ path, query }) => (query.length ? `${path}?${query.join('&')}` : path));
const text = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
);

/** Bodies of every shape the platform might send: JSON (compact, pretty, CRLF), text, raw bytes, empty. */
const currentBody = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }).map((v) => Buffer.from(JSON.stringify(v))),
  fc.jsonValue({ maxDepth: 2 }).map((v) => Buffer.from(`${JSON.stringify(v, null, 2).replace(/\n/g, '\r\n')}\n`)),
  text.map((s) => Buffer.from(s)),
  fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)),
  fc.constant(Buffer.alloc(0)),
);

/** v1.2 bodies: the top-level integer timestamp anywhere among members, with nested and quoted decoys. */
function legacyBodyArb(timestamp: number) {
  const member = fc.oneof(
    fc
      .tuple(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 2 }))
      .map(([k, v]) => `${JSON.stringify(`x${k}`)}:${JSON.stringify(v)}`),
    fc.integer().map((t) => `"data":{"timestamp":${t},"note":"\\"timestamp\\":${t}"}`),
    fc.constant('"memo":"timestamp"'),
  );
  return fc
    .tuple(
      fc.array(member, { maxLength: 4 }),
      fc.array(member, { maxLength: 4 }),
      fc.constantFrom('', ' ', '\n  '),
      fc.boolean(),
    )
    .map(([before, after, ws, pretty]) => {
      const members = [...before, `"timestamp":${ws}${timestamp}`, ...after];
      return Buffer.from(pretty ? `{\r\n  ${members.join(`,\r\n  `)}\r\n}` : `{${members.join(',')}}`);
    });
}

function signBase64(data: Buffer, key: KeyObject): string {
  return sign('sha256', data, key).toString('base64');
}

function currentWire(
  method: string,
  targetText: string,
  timestamp: number,
  nonceText: string,
  body: Buffer,
  key: KeyObject,
  appId: string,
): { wire: Wire; signature: string } {
  const signature = signBase64(currentStringToSign(method, targetText, String(timestamp), nonceText, body), key);
  const headers = {
    'x-svc-timestamp': String(timestamp),
    'x-svc-nonce': nonceText,
    'x-svc-sign': encodeURIComponent(signature),
    'x-svc-sign-alg': 'SHA256_WITH_RSA',
    'x-svc-appid': appId,
    'content-type': 'application/json',
  };
  return { wire: { method, target: targetText, headers, body }, signature };
}

function legacyWire(
  targetText: string,
  timestamp: number,
  body: Buffer,
  key: KeyObject,
): { wire: Wire; signature: string } {
  const signature = signBase64(legacyStringToSign(MERCHANT_ID, timestamp, body), key);
  const headers = {
    signature: encodeURIComponent(signature),
    type: 'RSA256',
    version: 'v1.2',
    'content-type': 'application/json',
  };
  return { wire: { method: 'POST', target: targetText, headers, body }, signature };
}

export function legacyReplayKeyOf(base64: string): string {
  return `sig:${createHash('sha256').update(Buffer.from(base64, 'base64')).digest('hex')}`;
}

/**
 * Genuine requests, signed once each (an RSA signature costs milliseconds; 100,000 of them would not
 * fit in a test run). The pool is drawn from the run's seed, so FUZZ_SEED replays it too.
 */
export function genuinePool(
  seed: number,
  size: number,
  signingKeys: readonly KeyObject[],
  foreignKey: KeyObject,
  environments: readonly string[] = [],
): Genuine[] {
  const current = fc.record({ key: fc.nat(signingKeys.length - 1), target, offset, nonce, body: currentBody });
  const legacy = fc
    .record({ key: fc.nat(signingKeys.length - 1), target, offset })
    .chain((r) => legacyBodyArb(NOW_MS + r.offset).map((body) => ({ ...r, body })));
  const pool: Genuine[] = [];
  for (const c of fc.sample(current, { seed, numRuns: size })) {
    const timestamp = NOW_MS + c.offset;
    const signed = currentWire('POST', c.target, timestamp, c.nonce, c.body, signingKeys[c.key]!, 'platform-app');
    const foreign = currentWire('POST', c.target, timestamp, c.nonce, c.body, foreignKey, 'platform-app');
    pool.push({
      scheme: 'current',
      wire: signed.wire,
      foreign: foreign.wire,
      replayKey: c.nonce,
      timestamp,
      signature: signed.signature,
      environment: environments[c.key],
    });
  }
  for (const l of fc.sample(legacy, { seed: seed + 1, numRuns: size })) {
    const timestamp = NOW_MS + l.offset;
    const signed = legacyWire(l.target, timestamp, l.body, signingKeys[l.key]!);
    const foreign = legacyWire(l.target, timestamp, l.body, foreignKey);
    pool.push({
      scheme: 'legacy',
      wire: signed.wire,
      foreign: foreign.wire,
      replayKey: legacyReplayKeyOf(signed.signature),
      timestamp,
      signature: signed.signature,
      environment: environments[l.key],
    });
  }
  return pool;
}
