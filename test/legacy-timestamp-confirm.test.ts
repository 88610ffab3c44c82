import { generateTestKeyPair } from '../src/signing/keypair';
import { sampleBody } from '../src/signing/samples';
import { signLegacy } from '../src/signing/sign';
import { buildHarness, type Harness } from './support/harness';
import { postRaw } from './support/post-raw';

const NOW = 1_795_000_000_000;
const MERCHANT = 'M100023';
const platform = generateTestKeyPair();
const TARGET = '/api/v2/merch/pay/notify';

let h: Harness;
beforeAll(() => {
  h = buildHarness(
    { PLATFORM_PUBLIC_KEYS: platform.publicKeyBase64, SIGNATURE_SCHEMES: 'current,legacy', MERCHANT_ID: MERCHANT },
    () => NOW,
  );
});
afterAll(() => h.close());

function sendLegacy(body: string) {
  const bytes = Buffer.from(body);
  return postRaw(
    h.app,
    TARGET,
    { 'content-type': 'application/json', ...signLegacy(platform.privateKeyPem, MERCHANT, NOW, bytes) },
    bytes,
  );
}

describe('the legacy body timestamp, confirmed after verification', () => {
  it('when the parsed body carries the timestamp that verified, then the notification is queued', async () => {
    const res = await sendLegacy(sampleBody('payment.result', { timestamp: NOW }));
    expect(res.status).toBe(200);
    expect(await h.pipeline.eventQueue('payment.result').count()).toBe(1);
  });

  it('when an escaped duplicate key gives the parsed body another timestamp, then it is quarantined (genuine but ambiguous), not queued', async () => {
    // The scan reads the plain "timestamp" (NOW, which verifies); JSON.parse would take the last member,
    // the escaped spelling of the same key (NOW - 1). A body with the same key twice is quarantined
    // before either is believed.
    const body = sampleBody('payment.result', { timestamp: NOW }).replace(/}$/, `,"time\\u0073tamp":${NOW - 1}}`);
    const res = await sendLegacy(body);
    expect(res.status).toBe(200);
    expect(await h.pipeline.eventQueue('payment.result').count()).toBe(1);
    expect(await h.pipeline.quarantine.count()).toBe(1);
    expect(
      h.logs.find((l) => l.message === 'notification quarantined: verified but not a valid notification'),
    ).toMatchObject({
      errors: ['duplicate key "timestamp"'],
    });
  });
});
