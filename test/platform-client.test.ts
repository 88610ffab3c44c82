import { createPublicKey, verify } from 'node:crypto';
import { loadPlatformKeys } from '../src/config/keys';
import { generateTestKeyPair } from '../src/signing/keypair';
import { signPlatformRequest, verifyPlatformResponse, type ResponseRefusal } from '../src/signing/platform-client';
import { loadVectors, type SignatureVector } from './support/vectors';

// The inquiry client against the independent vectors: it signs exactly the five-line string each
// vector holds, and it believes an answer exactly when the vector says it is valid (answers are signed
// as callbacks are, rule 6 and 7).
const file = loadVectors();
const current = file.vectors.filter((v) => v.scheme === 'current');
const keys = loadPlatformKeys([file.keys.platform_key_a_spki_base64, file.keys.platform_key_b_spki_base64]);
const merchant = generateTestKeyPair();

const REFUSAL: Record<Exclude<SignatureVector['expect'], 'valid'>, readonly ResponseRefusal[]> = {
  'invalid:signature': ['bad_signature', 'unsigned'],
  'invalid:timestamp': ['stale'],
  'invalid:header': ['malformed'],
};

describe('signing a request to the platform', () => {
  it.each(current.filter((v) => v.expect === 'valid').map((v) => [v.name, v] as const))(
    '%s: the signature covers exactly the vector string to sign',
    (_name, v) => {
      const headers = signPlatformRequest({
        privateKey: merchant.privateKeyPem,
        path: v.path,
        body: Buffer.from(v.body, 'utf8'),
        appId: 'merchant-app',
        timestamp: Number(v.headers['x-svc-timestamp']),
        nonce: v.headers['x-svc-nonce'],
      });
      const signature = Buffer.from(decodeURIComponent(headers['x-svc-sign']!), 'base64');
      const signed = Buffer.from(v.string_to_sign, 'utf8');
      expect(verify('sha256', signed, createPublicKey(merchant.publicKeyPem), signature)).toBe(true);
      expect(headers).toMatchObject({
        'x-svc-timestamp': v.headers['x-svc-timestamp'],
        'x-svc-nonce': v.headers['x-svc-nonce'],
        'x-svc-sign-alg': 'SHA256_WITH_RSA',
        'x-svc-appid': 'merchant-app',
      });
    },
  );

  it('sends X-Merch-Id only when given (the onboarding endpoints take none)', () => {
    const base = {
      privateKey: merchant.privateKeyPem,
      path: '/api/v2/merch/pay/inquiry',
      body: Buffer.from('{}'),
      appId: 'a',
    };
    expect(signPlatformRequest({ ...base, merchantId: 'M1' })['x-merch-id']).toBe('M1');
    expect(signPlatformRequest(base)).not.toHaveProperty('x-merch-id');
  });
});

describe('checking the platform answer', () => {
  it.each(current.map((v) => [v.name, v] as const))('%s is believed exactly when valid', (_name, v) => {
    const checked = verifyPlatformResponse({
      method: v.method,
      path: v.path,
      headers: v.headers,
      body: Buffer.from(v.body, 'utf8'),
      keys,
      nowMs: v.now_ms,
      toleranceMs: 300_000,
    });
    if (v.expect === 'valid') {
      expect(checked).toMatchObject({ ok: true, nonce: v.headers['x-svc-nonce'] });
    } else {
      expect(checked.ok).toBe(false);
      expect(REFUSAL[v.expect]).toContain(!checked.ok && checked.reason);
    }
  });
});
