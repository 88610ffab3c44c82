import { createPublicKey, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateTestKeyPair, type TestKeyPair } from '../../src/signing/keypair';
import { signPlatformResponse, verifyPlatformResponse } from '../../src/signing/platform-client';

/** One inquiry the stand-in received, and whether the merchant's signature over it verified. */
export interface InquiryReceived {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  json: Record<string, unknown>;
  signatureVerified: boolean;
}

/**
 * How the stand-in answers: `final` / `pending` (signed), `bad_signature` (signed with another key),
 * `unsigned`, `stale` (signed, timestamp 10 minutes old), `replayed` (signed, with the nonce of its
 * previous answer).
 */
export type AnswerMode = 'final' | 'pending' | 'bad_signature' | 'unsigned' | 'stale' | 'replayed';

/**
 * The platform's API in tests: a real local HTTP server holding the platform's private key. It checks
 * each inquiry's signature with the merchant's public key and answers with a signed envelope.
 */
export class StandInPlatform {
  readonly inquiries: InquiryReceived[] = [];
  private lastNonce: string | undefined;
  private readonly impostor = generateTestKeyPair();
  mode: (inquiry: InquiryReceived) => AnswerMode = () => 'final';
  /** How long each answer takes. */
  delayMs = 0;

  private constructor(
    private readonly server: Server,
    readonly platformKeys: TestKeyPair,
    private readonly merchantPublicKey: KeyObject,
  ) {}

  static async start(platformKeys: TestKeyPair, merchantPublicKeyPem: string): Promise<StandInPlatform> {
    let platform: StandInPlatform | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const { status, headers, body } = platform!.answer(req.url ?? '', req.headers, Buffer.concat(chunks));
        setTimeout(() => res.writeHead(status, headers).end(body), platform!.delayMs);
      });
    });
    platform = new StandInPlatform(server, platformKeys, createPublicKey(merchantPublicKeyPem));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    return platform;
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private answer(path: string, headers: InquiryReceived['headers'], raw: Buffer) {
    // The merchant's request is signed over the same five lines as an answer (spec 5.1).
    const checked = verifyPlatformResponse({
      method: 'POST',
      path,
      headers,
      body: raw,
      keys: [this.merchantPublicKey],
      nowMs: Date.now(),
      toleranceMs: 300_000,
    });
    const inquiry: InquiryReceived = {
      path,
      headers,
      body: raw.toString('utf8'),
      json: JSON.parse(raw.toString('utf8')) as Record<string, unknown>,
      signatureVerified: checked.ok && headers['x-svc-sign-alg'] === 'SHA256_WITH_RSA',
    };
    this.inquiries.push(inquiry);
    if (!inquiry.signatureVerified) {
      return { status: 401, headers: {}, body: '{"ret_code":"401","ret_msg":"Unauthorized"}' };
    }
    const mode = this.mode(inquiry);
    const status = mode === 'pending' ? 'PROCESSING' : 'SUCCESS';
    const body = Buffer.from(
      JSON.stringify({
        ret_code: '000000',
        ret_msg: 'Success',
        data: { request_id: inquiry.json.request_id, status, amount: '980.00', currency: 'EUR' },
      }),
    );
    if (mode === 'unsigned') return { status: 200, headers: { 'content-type': 'application/json' }, body };
    const nonce = mode === 'replayed' ? this.lastNonce : undefined;
    const signed = signPlatformResponse({
      privateKey: mode === 'bad_signature' ? this.impostor.privateKeyPem : this.platformKeys.privateKeyPem,
      path,
      body,
      ...(nonce ? { nonce } : {}),
      ...(mode === 'stale' ? { timestamp: Date.now() - 600_000 } : {}),
    });
    this.lastNonce = signed['x-svc-nonce'];
    return { status: 200, headers: signed, body };
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

/**
 * The `environments` setting of a service that asks this stand-in: production, verified with the
 * stand-in's platform key, the merchant's key read from TEST_MERCHANT_KEY, payment.result's inquiry
 * functions sending the request_id and the attempt; `api` adds to (or overrides) its api settings.
 */
export function environmentsAsking(standIn: StandInPlatform, api: Record<string, unknown> = {}) {
  return {
    production: {
      publicKeys: [standIn.platformKeys.publicKeyBase64],
      appId: 'merchant-app-1',
      merchantId: 'M100023',
      api: {
        baseUrl: standIn.baseUrl,
        privateKey: 'env:TEST_MERCHANT_KEY',
        inquiry: {
          'payment.result': {
            request: 'function request(e) { return { request_id: e.requestId, attempt: e.attempt }; }',
            settled: "function settled(r) { return r.data.status === 'SUCCESS' || r.data.status === 'FAILED'; }",
            timeoutMs: 1000,
          },
        },
        ...api,
      },
    },
  };
}
