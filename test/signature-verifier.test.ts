import { createHash } from 'node:crypto';
import { createPrecheck } from '../src/signature/precheck';
import type { SignedRequest } from '../src/signature/options';
import type { RejectionReason, VerifyResult } from '../src/signature/result';
import { createVerifier } from '../src/signature/verify';
import {
  currentRequest,
  legacyBody,
  legacyRequest,
  MERCHANT_ID,
  NOW_MS,
  rsaKeyPair,
  TARGET,
  verifierOptions,
  withHeaders,
} from './support/signed-request';

const platformA = rsaKeyPair();
const platformB = rsaKeyPair();
const foreign = rsaKeyPair();
const options = verifierOptions([platformA.publicKey, platformB.publicKey]);
const verify = createVerifier(options);
const precheck = createPrecheck(options);

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** A request whose Base64 signature holds both `+` and `/`, so every re-spelling case has work to do. */
function currentWithSymbols(): ReturnType<typeof currentRequest> {
  for (let i = 0; ; i++) {
    const req = currentRequest({ key: platformA.privateKey, nonce: `nonce-symbols-${i}` });
    const b64 = decodeURIComponent(req.headers['x-svc-sign']);
    if (b64.includes('+') && b64.includes('/')) return req;
  }
}

function legacyWithSymbols(): ReturnType<typeof legacyRequest> {
  for (let i = 0; ; i++) {
    const req = legacyRequest({ key: platformA.privateKey, body: legacyBody(NOW_MS, `L-symbols-${i}`) });
    const b64 = decodeURIComponent(req.headers.signature);
    if (b64.includes('+') && b64.includes('/')) return req;
  }
}

/** The ways one signature may be written: all must verify to one replay key. */
function equivalentSpellings(encoded: string): Record<string, string> {
  const b64 = decodeURIComponent(encoded);
  return {
    'URL-encoded (as the spec writes it)': encoded,
    'plain Base64': b64,
    'lower-case percent escapes': encoded.replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase()),
    'with its first 40 characters percent-encoded':
      [...b64.slice(0, 40)].map((c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).join('') + b64.slice(40),
    '%2B for + only': b64.replace(/\+/g, '%2B'),
  };
}

/** Spellings that decode (leniently) to the same bytes but are not canonical: all refused. */
function nonCanonicalSpellings(encoded: string): Record<string, string> {
  const b64 = decodeURIComponent(encoded);
  const lastData = b64.length - 3; // 256 bytes: "xx==" at the end, 4 pad bits in the char before "=="
  const padBitsSet =
    b64.slice(0, lastData) + ALPHABET.charAt(ALPHABET.indexOf(b64.charAt(lastData)) | 1) + b64.slice(lastData + 1);
  return {
    'padding dropped': b64.replace(/=+$/, ''),
    'one pad character dropped': b64.slice(0, -1),
    'extra padding': `${b64}==`,
    'URL-safe alphabet': b64.replace(/\+/g, '-').replace(/\//g, '_'),
    'non-zero pad bits': padBitsSet,
    'URL-encoded twice': encodeURIComponent(encoded),
    'a line break inside': `${b64.slice(0, 76)}\n${b64.slice(76)}`,
    'a space inside': `${b64.slice(0, 76)} ${b64.slice(76)}`,
    'a broken percent escape': `${encoded.slice(0, 10)}%zz${encoded.slice(10)}`,
    'leading whitespace': ` ${b64}`,
  };
}

function expectRejected(result: VerifyResult, reason: RejectionReason, detail?: string): void {
  expect(result).toEqual({ ok: false, reason, detail: detail ?? expect.any(String) });
}

/** The precheck refuses with the verifier's own answer, or lets the request through to it. */
function expectPrecheckAgrees(req: SignedRequest): boolean {
  const early = precheck(req.headers, req.nowMs);
  const full = verify(req);
  if (early) expect(full).toEqual(early);
  else if (!full.ok) expect(['bad_signature', 'malformed_header', 'timestamp_outside_window']).toContain(full.reason);
  return early !== undefined;
}

describe('the current scheme (spec 5.1)', () => {
  const genuine = currentWithSymbols();

  it('when the request is as the platform signed it, then it verifies and the replay key is the nonce', () => {
    expect(verify(genuine)).toEqual({
      ok: true,
      scheme: 'current',
      environment: 'production',
      timestamp: NOW_MS,
      replayKey: genuine.headers['x-svc-nonce'],
      signatureHeaders: {
        'x-svc-timestamp': genuine.headers['x-svc-timestamp'],
        'x-svc-nonce': genuine.headers['x-svc-nonce'],
        'x-svc-sign': genuine.headers['x-svc-sign'],
        'x-svc-sign-alg': 'SHA256_WITH_RSA',
        'x-svc-appid': 'platform-app',
      },
      key: platformA.publicKey,
    });
    expect(precheck(genuine.headers, NOW_MS)).toBeUndefined();
  });

  it('when signed with the second configured key (rotation), then it verifies and names that key', () => {
    const result = verify(currentRequest({ key: platformB.privateKey }));
    expect(result.ok && result.key).toBe(platformB.publicKey);
  });

  it.each(Object.entries(equivalentSpellings(genuine.headers['x-svc-sign'])))(
    'when the signature is written %s, then it verifies to the same replay key',
    (_how, sign) => {
      const result = verify(withHeaders(genuine, { 'x-svc-sign': sign }));
      expect(result).toMatchObject({ ok: true, replayKey: genuine.headers['x-svc-nonce'] });
    },
  );

  it.each(Object.entries(nonCanonicalSpellings(genuine.headers['x-svc-sign'])))(
    'when the signature is written with %s, then it is refused as malformed',
    (_how, sign) => {
      const req = withHeaders(genuine, { 'x-svc-sign': sign });
      expectRejected(verify(req), 'malformed_signature', 'x-svc-sign is not canonical (URL-encoded) Base64');
      expect(precheck(req.headers, NOW_MS)).toEqual(verify(req));
    },
  );

  const headerCases: [string, Record<string, string | undefined>, RejectionReason, string][] = [
    ['the timestamp is missing', { 'x-svc-timestamp': undefined }, 'missing_header', 'x-svc-timestamp is missing'],
    [
      'the timestamp is not digits',
      { 'x-svc-timestamp': '17950000000z0' },
      'malformed_header',
      'x-svc-timestamp must be 1 to 13 digits (milliseconds)',
    ],
    [
      'the timestamp has 14 digits',
      { 'x-svc-timestamp': `0${NOW_MS}` },
      'malformed_header',
      'x-svc-timestamp must be 1 to 13 digits (milliseconds)',
    ],
    [
      'the timestamp header is repeated (Node joins with ", ")',
      { 'x-svc-timestamp': `${NOW_MS}, ${NOW_MS}` },
      'malformed_header',
      'x-svc-timestamp must be 1 to 13 digits (milliseconds)',
    ],
    ['the nonce is missing', { 'x-svc-nonce': undefined }, 'missing_header', 'x-svc-nonce is missing'],
    [
      'the nonce is 9 characters',
      { 'x-svc-nonce': '123456789' },
      'malformed_header',
      'x-svc-nonce must be 10 to 100 characters',
    ],
    [
      'the nonce is 101 characters',
      { 'x-svc-nonce': 'n'.repeat(101) },
      'malformed_header',
      'x-svc-nonce must be 10 to 100 characters',
    ],
    ['the signature is missing', { 'x-svc-sign': undefined }, 'missing_signature', 'x-svc-sign is missing'],
    ['the signature is empty', { 'x-svc-sign': '' }, 'missing_signature', 'x-svc-sign is missing'],
    [
      'the signature is 501 characters',
      { 'x-svc-sign': 'A'.repeat(501) },
      'malformed_header',
      'x-svc-sign must be at most 500 characters',
    ],
    [
      'the signature header is repeated (Node joins with ", ")',
      { 'x-svc-sign': 'AAAA, AAAA' },
      'malformed_signature',
      'x-svc-sign is not canonical (URL-encoded) Base64',
    ],
    [
      'the algorithm is SHA1_WITH_RSA',
      { 'x-svc-sign-alg': 'SHA1_WITH_RSA' },
      'malformed_header',
      'x-svc-sign-alg must be SHA256_WITH_RSA',
    ],
    [
      "the appid is not the platform's",
      { 'x-svc-appid': 'someone-else' },
      'malformed_header',
      "x-svc-appid is not the platform's",
    ],
    [
      'the appid is 65 characters',
      { 'x-svc-appid': 'a'.repeat(65) },
      'malformed_header',
      'x-svc-appid must be 1 to 64 characters',
    ],
    [
      'the timestamp is 5 min 1 ms old',
      { 'x-svc-timestamp': String(NOW_MS - 300_001) },
      'timestamp_outside_window',
      'x-svc-timestamp is outside the allowed window',
    ],
    [
      'the timestamp is 5 min 1 ms ahead',
      { 'x-svc-timestamp': String(NOW_MS + 300_001) },
      'timestamp_outside_window',
      'x-svc-timestamp is outside the allowed window',
    ],
  ];
  it.each(headerCases)(
    'when %s, then the verifier and the precheck both refuse it alike',
    (_case, changes, reason, detail) => {
      const req = withHeaders(genuine, changes);
      expectRejected(verify(req), reason, detail);
      expect(precheck(req.headers, NOW_MS)).toEqual(verify(req));
    },
  );

  const signedCases: [string, (r: typeof genuine) => SignedRequest][] = [
    ['one body byte changes', (r) => ({ ...r, body: Buffer.from(r.body.toString().replace('PAY1', 'PAY2')) })],
    ['the last body byte is dropped', (r) => ({ ...r, body: r.body.subarray(0, -1) })],
    ['an LF is appended to the body', (r) => ({ ...r, body: Buffer.concat([r.body, Buffer.from('\n')]) })],
    ['the path changes', (r) => ({ ...r, target: '/api/v2/fx/conversion/notify' })],
    ['a query string is added', (r) => ({ ...r, target: `${TARGET}?x=1` })],
    ['the path changes case', (r) => ({ ...r, target: TARGET.toUpperCase() })],
    ['the method changes', (r) => ({ ...r, method: 'PUT' })],
    ['the nonce changes', (r) => withHeaders(r, { 'x-svc-nonce': `${r.headers['x-svc-nonce']}x` })],
    ['the nonce changes case', (r) => withHeaders(r, { 'x-svc-nonce': r.headers['x-svc-nonce'].toUpperCase() })],
    ['the timestamp moves 1 ms within the window', (r) => withHeaders(r, { 'x-svc-timestamp': String(NOW_MS - 1) })],
    ['it is signed by a foreign key', () => currentRequest({ key: foreign.privateKey })],
  ];
  it.each(signedCases)(
    'when %s, then the signature does not verify (and the precheck lets the verifier decide)',
    (_case, mutate) => {
      const req = mutate(genuine);
      expectRejected(verify(req), 'bad_signature', 'signature does not verify');
      expect(precheck(req.headers, NOW_MS)).toBeUndefined();
    },
  );

  it.each([
    ['an X-Merch-Id is added', { 'x-merch-id': 'SUB-1' }],
    ['the User-Agent differs', { 'user-agent': 'curl/8' }],
    ['the unsigned appid header is dropped', { 'x-svc-appid': undefined }],
    ['the unsigned algorithm header is dropped', { 'x-svc-sign-alg': undefined }],
  ])('when %s, then it still verifies to the same replay key', (_case, changes) => {
    expect(verify(withHeaders(genuine, changes))).toMatchObject({
      ok: true,
      replayKey: genuine.headers['x-svc-nonce'],
    });
  });

  it('when only the legacy scheme is enabled, then a current-scheme request is judged as legacy and refused', () => {
    const legacyOnly = createVerifier(verifierOptions([platformA.publicKey], { schemes: ['legacy'] }));
    expectRejected(legacyOnly(genuine), 'missing_signature', 'signature is missing');
  });
});

describe('the legacy scheme (spec 5.2)', () => {
  const genuine = legacyWithSymbols();
  const bytes = Buffer.from(decodeURIComponent(genuine.headers.signature), 'base64');
  const replayKey = `sig:${createHash('sha256').update(bytes).digest('hex')}`;

  it('when the request is as the platform signed it, then it verifies and the replay key is the hash of the signature bytes', () => {
    expect(verify(genuine)).toEqual({
      ok: true,
      scheme: 'legacy',
      environment: 'production',
      timestamp: NOW_MS,
      replayKey,
      signatureHeaders: { signature: genuine.headers.signature, type: 'RSA256', version: 'v1.2' },
      key: platformA.publicKey,
      signedMerchantId: MERCHANT_ID,
    });
    expect(precheck(genuine.headers, NOW_MS)).toBeUndefined();
  });

  it.each(Object.entries(equivalentSpellings(genuine.headers.signature)))(
    'when the signature is written %s, then it verifies to the same replay key',
    (_how, signature) => {
      expect(verify(withHeaders(genuine, { signature }))).toMatchObject({ ok: true, replayKey });
    },
  );

  it.each(Object.entries(nonCanonicalSpellings(genuine.headers.signature)))(
    'when the signature is written with %s, then it is refused as malformed',
    (_how, signature) => {
      const req = withHeaders(genuine, { signature });
      expectRejected(verify(req), 'malformed_signature', 'signature is not canonical (URL-encoded) Base64');
      expect(precheck(req.headers, NOW_MS)).toEqual(verify(req));
    },
  );

  const headerCases: [string, Record<string, string | undefined>, RejectionReason, string][] = [
    ['the signature is empty', { signature: '' }, 'missing_signature', 'signature is missing'],
    [
      'the signature is missing (then no header says legacy: the current scheme judges it)',
      { signature: undefined },
      'missing_header',
      'x-svc-timestamp is missing',
    ],
    [
      'the signature is 501 characters',
      { signature: 'A'.repeat(501) },
      'malformed_header',
      'signature must be at most 500 characters',
    ],
    ['the type is missing', { type: undefined }, 'missing_header', 'type must be RSA256'],
    ['the type is RSA', { type: 'RSA' }, 'malformed_header', 'type must be RSA256'],
    ['the version is missing', { version: undefined }, 'missing_header', 'version must be v1.2'],
    ['the version is v1.3', { version: 'v1.3' }, 'malformed_header', 'version must be v1.2'],
  ];
  it.each(headerCases)(
    'when %s, then the verifier and the precheck both refuse it alike',
    (_case, changes, reason, detail) => {
      const req = withHeaders(genuine, changes);
      expectRejected(verify(req), reason, detail);
      expect(precheck(req.headers, NOW_MS)).toEqual(verify(req));
    },
  );

  it('when no merchant id is configured, then it is refused before the body is looked at', () => {
    const noMerchant = verifierOptions([platformA.publicKey], { merchantId: undefined });
    expectRejected(createVerifier(noMerchant)(genuine), 'bad_signature', 'legacy scheme needs MERCHANT_ID');
    expect(createPrecheck(noMerchant)(genuine.headers, NOW_MS)).toEqual(createVerifier(noMerchant)(genuine));
  });

  const bodyCases: [string, string, RejectionReason, string][] = [
    [
      'the body has no timestamp',
      '{"type":"MERCH"}',
      'malformed_header',
      'body timestamp (integer milliseconds) is missing',
    ],
    [
      'the timestamp is only nested',
      `{"data":{"timestamp":${NOW_MS}}}`,
      'malformed_header',
      'body timestamp (integer milliseconds) is missing',
    ],
    [
      'the timestamp is a string',
      `{"timestamp":"${NOW_MS}"}`,
      'malformed_header',
      'body timestamp is not a non-negative integer (milliseconds)',
    ],
    [
      'the timestamp appears twice',
      `{"timestamp":${NOW_MS},"timestamp":${NOW_MS}}`,
      'malformed_header',
      'body timestamp appears more than once',
    ],
    ['the body is not an object', `[{"timestamp":${NOW_MS}}]`, 'malformed_header', 'body is not a JSON object'],
    [
      'the body timestamp is stale',
      `{"timestamp":${NOW_MS - 300_001}}`,
      'timestamp_outside_window',
      'body timestamp is outside the allowed window',
    ],
  ];
  it.each(bodyCases)(
    'when %s, then it is refused (the precheck cannot know: no body)',
    (_case, body, reason, detail) => {
      const req = legacyRequest({ key: platformA.privateKey, body: Buffer.from(body) });
      expectRejected(verify(req), reason, detail);
      expect(precheck(req.headers, NOW_MS)).toBeUndefined();
    },
  );

  const signedCases: [string, (r: typeof genuine) => SignedRequest][] = [
    ['one body byte changes', (r) => ({ ...r, body: Buffer.from(r.body.toString().replace('SUCCESS', 'FAILURE')) })],
    ['the last body byte is dropped', (r) => ({ ...r, body: r.body.subarray(0, -1) })],
    [
      'the body timestamp moves 1 ms',
      () => legacyRequest({ key: platformA.privateKey, timestamp: NOW_MS, body: legacyBody(NOW_MS - 1) }),
    ],
    ['it was signed for another merchant', () => legacyRequest({ key: platformA.privateKey, merchantId: 'M999999' })],
    ['it is signed by a foreign key', () => legacyRequest({ key: foreign.privateKey })],
  ];
  it.each(signedCases)('when %s, then the signature does not verify', (_case, mutate) => {
    expectRejected(verify(mutate(genuine)), 'bad_signature', 'signature does not verify');
  });

  it('when an unsigned header changes (X-Merch-Id, User-Agent), then it verifies to the same replay key', () => {
    expect(verify(withHeaders(genuine, { 'x-merch-id': 'SUB-1', 'user-agent': 'x' }))).toMatchObject({
      ok: true,
      replayKey,
    });
  });

  it('when a hostile 256 KiB body arrives with a bad signature, then nothing JSON-parses it', () => {
    const filler = `"pad":[${'{"a":"\\"timestamp\\"","b":[1,2,3]},'.repeat(7000)}0]`;
    const body = Buffer.from(`{${filler.padEnd(256 * 1024 - 40, ' ')},"timestamp":${NOW_MS}}`);
    const parse = jest.spyOn(JSON, 'parse');
    try {
      const req = withHeaders(legacyRequest({ key: platformA.privateKey }), {});
      expectRejected(verify({ ...req, body }), 'bad_signature', 'signature does not verify');
      expect(parse).not.toHaveBeenCalled();
    } finally {
      parse.mockRestore();
    }
  });

  it('when scheme detection sees a current-scheme header beside a legacy signature, then the current scheme judges it', () => {
    expectRejected(
      verify(withHeaders(genuine, { 'x-svc-nonce': 'abcdefghijk' })),
      'missing_header',
      'x-svc-timestamp is missing',
    );
  });
});

describe('the precheck over every header case at once', () => {
  it('never refuses what the verifier would accept, and refuses only as the verifier does', () => {
    const requests = [currentWithSymbols(), legacyWithSymbols()];
    let refusedEarly = 0;
    for (const req of requests) {
      for (const [name, value] of Object.entries(req.headers)) {
        for (const changed of [undefined, '', `${value}, ${value}`]) {
          if (expectPrecheckAgrees(withHeaders(req, { [name]: changed }))) refusedEarly++;
        }
      }
      expect(expectPrecheckAgrees(req)).toBe(false);
    }
    // 10 headers x 3 changes; content-type and the changes only the body or the RSA check can judge pass.
    expect(refusedEarly).toBeGreaterThanOrEqual(20);
  });
});
