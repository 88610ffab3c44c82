import type { RequestListener } from 'node:http';
import { eventDefinition, type EventType } from '../../src/model/event-table';
import { generateTestKeyPair, type TestKeyPair } from '../../src/signing/keypair';
import { sampleBody } from '../../src/signing/samples';
import { randomNonce, signCurrent } from '../../src/signing/sign';
import { postRaw } from './post-raw';

/** Plays the platform in tests: one key pair, signs and sends notifications. */
export class FakePlatform {
  readonly keys: TestKeyPair = generateTestKeyPair();

  signed(
    type: EventType,
    opts: { body?: string | Buffer; nonce?: string; timestamp?: number; basePath?: string; query?: string } = {},
  ) {
    const target = `${opts.basePath ?? ''}${eventDefinition(type).path}${opts.query ?? ''}`;
    const body = opts.body === undefined ? Buffer.from(sampleBody(type)) : Buffer.from(opts.body);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      ...signCurrent({
        privateKey: this.keys.privateKeyPem,
        target,
        body,
        nonce: opts.nonce ?? randomNonce(),
        timestamp: opts.timestamp,
      }),
    };
    return { target, headers, body };
  }

  send(app: RequestListener, n: { target: string; headers: Record<string, string>; body: Buffer }) {
    return postRaw(app, n.target, n.headers, n.body);
  }
}
