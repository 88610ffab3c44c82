import { createHash } from 'node:crypto';
import { loadPlatformKeys } from '../src/config/keys';
import { createPrecheck } from '../src/signature/precheck';
import { REJECTION_CLASS, type RejectionClass } from '../src/signature/result';
import { createVerifier } from '../src/signature/verify';
import { verifierOptions } from './support/signed-request';
import { loadVectors, type SignatureVector } from './support/vectors';

// The fast layer: the shared vectors against the pure verifier, no HTTP, no Redis (the HTTP run in
// signature-vectors.test.ts checks the wiring).
const file = loadVectors();
const { keys } = file;

const expectedClass: Record<Exclude<SignatureVector['expect'], 'valid'>, RejectionClass> = {
  'invalid:signature': 'signature',
  'invalid:timestamp': 'timestamp',
  'invalid:header': 'header',
};

describe.each([
  ['Base64 X.509 DER', keys.platform_key_a_spki_base64],
  ['PEM public key', keys.platform_key_a_pem],
  ['PEM certificate', keys.platform_key_a_certificate_pem],
])('the shared signature vectors against the pure verifier, key A as %s and key B configured', (_form, keyA) => {
  const options = verifierOptions(loadPlatformKeys([keyA, keys.platform_key_b_spki_base64]), {
    merchantId: file.merchant_id,
    appId: undefined,
  });
  const verify = createVerifier(options);
  const precheck = createPrecheck(options);

  it.each(file.vectors.map((v) => [v.name, v] as const))('%s behaves as it expects', (_name, v) => {
    const result = verify({
      method: v.method,
      target: v.path,
      headers: v.headers,
      body: Buffer.from(v.body, 'utf8'),
      nowMs: v.now_ms,
    });
    if (v.expect === 'valid') {
      expect({ name: v.name, ok: result.ok }).toEqual({ name: v.name, ok: true });
    } else {
      expect({ name: v.name, class: result.ok ? 'verified' : REJECTION_CLASS[result.reason] }).toEqual({
        name: v.name,
        class: expectedClass[v.expect],
      });
    }
    const early = precheck(v.headers, v.now_ms);
    if (early) expect(result).toEqual(early);
  });

  it('gives a legacy vector the replay key of its decoded signature bytes', () => {
    const v = file.vectors.find((x) => x.name === 'legacy-basic') as SignatureVector;
    const bytes = Buffer.from(decodeURIComponent(v.headers.signature!), 'base64');
    const result = verify({
      method: 'POST',
      target: v.path,
      headers: v.headers,
      body: Buffer.from(v.body),
      nowMs: v.now_ms,
    });
    expect(result).toMatchObject({ ok: true, replayKey: `sig:${createHash('sha256').update(bytes).digest('hex')}` });
  });
});
