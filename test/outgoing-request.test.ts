import { webcrypto } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { buildRequest } from '../src/forwarding/build-request';
import { createSigner } from '../src/forwarding/signer';
import { targetSchema } from '../src/model/target-schema';
import type { DeliveryJob } from '../src/model/jobs';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const OLD_SECRET = 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD';
const AT = new Date('2026-11-24T10:00:00.000Z');

function job(rawBody: string, rawBodyEncoding: 'utf8' | 'base64' = 'utf8'): DeliveryJob {
  return {
    eventId: 'evt_1',
    eventType: 'payment.result',
    environment: 'production',
    receivedAt: '2026-11-24T09:59:59.000Z',
    path: '/notify/payment',
    rawBody,
    rawBodyEncoding,
    contentType: 'application/json',
    signatureHeaders: { 'x-svc-sign': 'abc' },
    target: 't',
  };
}

/** The Standard Webhooks signature of exact bytes, through WebCrypto (a separate HMAC implementation). */
async function expectedSignature(secret: string, signed: Buffer): Promise<string> {
  const key = await webcrypto.subtle.importKey(
    'raw',
    Buffer.from(secret.slice('whsec_'.length), 'base64'),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  return `v1,${Buffer.from(await webcrypto.subtle.sign('HMAC', key, signed)).toString('base64')}`;
}

describe('outgoing request', () => {
  it('standard: the body is {id, type, timestamp, environment, data} with the platform bytes spliced in, and the signature verifies with the standardwebhooks package', () => {
    const target = targetSchema.parse({ name: 't', url: 'http://127.0.0.1:1/', events: ['*'], secret: SECRET });
    const raw = '{"amount":1.10,"note":"café"}';
    // Now, not AT: the package's verify also checks the timestamp against the clock.
    const req = buildRequest(job(raw), target, createSigner(target), new Date());
    expect(Buffer.from(req.body).toString('utf8')).toBe(
      `{"id":"evt_1","type":"payment.result","timestamp":"2026-11-24T09:59:59.000Z","environment":"production","data":${raw}}`,
    );
    const payload = new Webhook(SECRET).verify(Buffer.from(req.body).toString('utf8'), req.headers) as {
      data: unknown;
    };
    expect(payload.data).toEqual({ amount: 1.1, note: 'café' });
  });

  it('a rotation signs with every secret, each verifiable on its own', async () => {
    const target = targetSchema.parse({
      name: 't',
      url: 'http://127.0.0.1:1/',
      events: ['*'],
      secret: [SECRET, OLD_SECRET],
    });
    const req = buildRequest(job('{"a":1}'), target, createSigner(target), AT);
    const signed = Buffer.concat([Buffer.from(`evt_1.${AT.getTime() / 1000}.`), Buffer.from(req.body)]);
    expect(req.headers['webhook-signature']).toBe(
      `${await expectedSignature(SECRET, signed)} ${await expectedSignature(OLD_SECRET, signed)}`,
    );
  });

  it('passthrough of a body that is not UTF-8: the exact bytes go out, and the signature is over those bytes', async () => {
    const bytes = Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]);
    const target = targetSchema.parse({
      name: 't',
      url: 'http://127.0.0.1:1/',
      events: ['*'],
      format: 'passthrough',
      secret: SECRET,
    });
    const req = buildRequest(job(bytes.toString('base64'), 'base64'), target, createSigner(target), AT);
    expect(Buffer.compare(Buffer.from(req.body), bytes)).toBe(0);
    expect(req.headers['x-svc-sign']).toBe('abc');
    const signed = Buffer.concat([Buffer.from(`evt_1.${AT.getTime() / 1000}.`), bytes]);
    expect(req.headers['webhook-signature']).toBe(await expectedSignature(SECRET, signed));
    // What signing a decoded string (U+FFFD for the bad bytes) would give instead, as the package's sign() does.
    expect(req.headers['webhook-signature']).not.toBe(new Webhook(SECRET).sign('evt_1', AT, bytes));
  });

  it('a target without a secret sends no webhook-signature', () => {
    const target = targetSchema.parse({ name: 't', url: 'http://127.0.0.1:1/', events: ['*'] });
    expect(createSigner(target)).toBeUndefined();
    expect(buildRequest(job('{}'), target, undefined, AT).headers['webhook-signature']).toBeUndefined();
  });
});
