import type { KeyObject } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { EVENT_TABLE } from '../../src/model/event-table';
import { randomNonce, signCurrent } from '../../src/signing/sign';
import { uniqueSampleBody } from './bodies';

/** One notification ready to send: signed, with a nonce of its own. */
export interface PresignedRequest {
  path: string;
  headers: Record<string, string>;
  body: string;
  /** `data.request_id` of the body: unique per notification, how the sink recognises the delivery. */
  requestId: string;
}

export interface PresignOptions {
  /**
   * The signed timestamp of request i. Defaults to now; a paced run signs each request for the moment
   * it is due, so a run longer than the 5-minute window can still be signed before it starts.
   */
  timestampAt?: (i: number) => number;
}

/**
 * Signs `count` notifications, cycling through the seven event types. Signing is done before the
 * load starts so the load generator only sends bytes; it yields now and then so timers (RSS
 * sampling, IPC) in this process keep running.
 */
export async function presign(
  privateKey: KeyObject,
  count: number,
  opts: PresignOptions = {},
): Promise<PresignedRequest[]> {
  const out: PresignedRequest[] = [];
  for (let i = 0; i < count; i++) {
    const definition = EVENT_TABLE[i % EVENT_TABLE.length];
    if (!definition) throw new Error('empty event table');
    const { body, requestId } = uniqueSampleBody(definition.type);
    const bytes = Buffer.from(body);
    const headers = {
      'content-type': 'application/json',
      ...signCurrent({
        privateKey,
        target: definition.path,
        body: bytes,
        nonce: randomNonce(),
        timestamp: opts.timestampAt?.(i),
      }),
    };
    out.push({ path: definition.path, headers, body, requestId });
    if (i % 2000 === 1999) await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return out;
}

/** What the load generator reads: requests only, without the request ids it does not need. */
export function writeRequestsFile(file: string, requests: readonly PresignedRequest[]): void {
  writeFileSync(file, JSON.stringify(requests.map(({ path, headers, body }) => ({ path, headers, body }))));
}
