import { decodeSignatureHeader } from '../signature/base64';
import { currentStringToSign } from '../signature/verify-current';
import { LEGACY_HEADERS, legacyStringToSign } from '../signature/verify-legacy';
import type { NotificationFacts } from './chain';

/** What the platform signed and its signature, rebuilt from an archived row; undefined when the row lacks a part. */
export interface SignedBytes {
  /** The exact bytes the signature covers: the current scheme's five lines, or the legacy string. */
  signed: Buffer;
  signature: Buffer;
}

type Facts = Pick<NotificationFacts, 'scheme' | 'headers' | 'path' | 'body' | 'signedTimestamp' | 'signedMerchantId'>;

/** The current scheme's header of one role, whatever the configured prefix (`x-svc-sign`, …). */
function headerEnding(headers: Record<string, string>, suffix: string): string | undefined {
  const name = Object.keys(headers).find((n) => n.endsWith(suffix));
  return name === undefined ? undefined : headers[name];
}

export function signedBytesOf(row: Facts): SignedBytes | undefined {
  if (row.scheme === 'legacy') {
    const header = row.headers[LEGACY_HEADERS.signature];
    const signature = header === undefined ? undefined : decodeSignatureHeader(header);
    if (!signature || row.signedMerchantId === null) return undefined;
    return { signed: legacyStringToSign(row.signedMerchantId, row.signedTimestamp, row.body), signature };
  }
  const timestamp = headerEnding(row.headers, '-timestamp');
  const nonce = headerEnding(row.headers, '-nonce');
  const sign = headerEnding(row.headers, '-sign');
  const signature = sign === undefined ? undefined : decodeSignatureHeader(sign);
  if (timestamp === undefined || nonce === undefined || !signature) return undefined;
  return { signed: currentStringToSign('POST', row.path, timestamp, nonce, row.body), signature };
}
