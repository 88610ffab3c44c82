import type request from 'supertest';
import { RET_CODES, SUCCESS } from '../src/http/envelope';
import { buildHarness, type Harness } from './support/harness';
import { postRaw } from './support/post-raw';
import { loadVectors, type SignatureVector } from './support/vectors';

const file = loadVectors();
const { keys } = file;

const expectedRetCode: Record<Exclude<SignatureVector['expect'], 'valid'>, string> = {
  'invalid:signature': RET_CODES.signature,
  'invalid:timestamp': RET_CODES.timestamp,
  'invalid:header': RET_CODES.header,
};

function send(h: Harness, v: SignatureVector) {
  return postRaw(h.app, v.path, v.headers, v.body);
}

function assertAsExpected(v: SignatureVector, res: request.Response): void {
  if (v.expect === 'valid') {
    expect({ name: v.name, status: res.status, body: res.body }).toEqual({ name: v.name, status: 200, body: SUCCESS });
  } else {
    expect({ name: v.name, status: res.status, code: res.body.ret_code }).toEqual({
      name: v.name,
      status: 401,
      code: expectedRetCode[v.expect],
    });
  }
}

describe.each([
  ['Base64 X.509 DER', keys.platform_key_a_spki_base64],
  ['PEM public key', keys.platform_key_a_pem],
  ['PEM certificate', keys.platform_key_a_certificate_pem],
])('the shared signature vectors, with key A as %s and key B configured', (_form, keyA) => {
  let h: Harness;
  beforeAll(() => {
    h = buildHarness(
      {
        PLATFORM_PUBLIC_KEYS: `${keyA},${keys.platform_key_b_spki_base64}`,
        SIGNATURE_SCHEMES: 'current,legacy',
        MERCHANT_ID: file.merchant_id,
        LOG_LEVEL: 'debug',
      },
      () => file.now_ms,
    );
  });
  afterAll(() => h.close());

  it.each(file.vectors.map((v) => [v.name, v] as const))('%s behaves as it expects', async (_name, v) => {
    const res = await send(h, v);
    assertAsExpected(v, res);
    if (v.expect !== 'valid') {
      const line = h.logs.find(
        (l) => l.outcome === 'rejected' && l.path === v.path && l.message === 'notification rejected',
      );
      expect(line).toBeDefined();
    }
  });

  it('when a legacy signature is reused on another notify path, then it is held in quarantine, not queued as that type; on its own path it is a replay', async () => {
    const v = file.vectors.find((x) => x.name === 'legacy-basic') as SignatureVector;
    const fxBefore = await h.pipeline.eventQueue('fx.result').count();
    const elsewhere = await send(h, { ...v, path: '/api/v2/fx/conversion/notify' });
    expect(elsewhere.status).toBe(200);
    expect(elsewhere.body.ret_code).toBe(SUCCESS.ret_code);
    expect(h.logs.find((l) => l.reason === 'signature_reused')).toBeDefined();
    const held = await h.pipeline.quarantine.getJobs(['waiting']);
    expect(held.filter((j) => j.data.reason === 'signature_reused').map((j) => j.data.eventType)).toEqual([
      'fx.result',
    ]);
    const again = await send(h, v);
    expect(again.status).toBe(200);
    expect(await h.pipeline.eventQueue('fx.result').count()).toBe(fxBefore);
  });

  it('never writes a signature or a raw body to the logs', () => {
    const everything = h.logs.raw.join('\n');
    for (const v of file.vectors) {
      const sign = v.headers['x-svc-sign'] ?? v.headers.signature;
      if (sign) expect(everything).not.toContain(sign);
      if (v.body.length > 20) expect(everything).not.toContain(v.body);
    }
  });
});

describe('the shared signature vectors with only key A configured', () => {
  let h: Harness;
  beforeAll(() => {
    h = buildHarness({ PLATFORM_PUBLIC_KEYS: keys.platform_key_a_spki_base64 }, () => file.now_ms);
  });
  afterAll(() => h.close());

  it('when a notification is signed with key B, then it answers 401 bad signature', async () => {
    const v = file.vectors.find((x) => x.name === 'current-rotated-key-b') as SignatureVector;
    const res = await send(h, v);
    expect(res.status).toBe(401);
    expect(res.body.ret_code).toBe(RET_CODES.signature);
  });

  it('when the legacy scheme is not enabled, then a v1.2 notification is refused', async () => {
    const v = file.vectors.find((x) => x.name === 'legacy-basic') as SignatureVector;
    const res = await send(h, v);
    expect(res.status).toBe(401);
  });
});
