import { UsageError } from '../errors';
import { readFileSync } from 'node:fs';
import { EVENT_TYPES, eventDefinition, isEventType, type EventType } from '../../model/event-table';
import { sampleBody } from '../../signing/samples';
import { signCurrent, signLegacy } from '../../signing/sign';
import { DEFAULT_ENVIRONMENT } from '../../model/environments';
import { eventIdFor } from '../../model/ids';
import { requestIdsOf } from '../../pipeline/request-index';

export interface SendOptions {
  url: string;
  keyFile: string;
  scheme: 'current' | 'legacy';
  bodyFile?: string;
  headerPrefix: string;
  basePath: string;
  appId?: string;
  merchantId?: string;
  subMerchantId?: string;
  /**
   * The receiver's name for the environment whose key signs (it takes part in the event id). @defaultValue production
   */
  environment?: string;
  /** Send the very same signed request this many times (to see replays answered). */
  times: number;
}

export interface SendResult {
  type: EventType;
  status: number;
  body: string;
  /** The event id the receiver gives this notification (environment, type and body), for `event <id>`. */
  eventId: string;
  /** The body's `request_id` (top level or in `data`), when it has one, for `event --request-id`. */
  requestId?: string;
}

/** Signs a sample (or given) notification as the platform would and POSTs it, like `stripe trigger`. */
export async function sendNotification(type: EventType, opts: SendOptions): Promise<SendResult[]> {
  const privateKey = readFileSync(opts.keyFile, 'utf8');
  const target = `${opts.basePath}${eventDefinition(type).path}`;
  const now = Date.now();
  const text = opts.bodyFile
    ? readFileSync(opts.bodyFile === '-' ? 0 : opts.bodyFile, 'utf8')
    : sampleBody(type, opts.scheme === 'legacy' ? { timestamp: now, merchantId: opts.merchantId } : {});
  const body = Buffer.from(text, 'utf8');
  const signature =
    opts.scheme === 'legacy'
      ? signLegacy(privateKey, requireMerchant(opts.merchantId), legacyTimestamp(text, now), body)
      : signCurrent({ privateKey, target, body, headerPrefix: opts.headerPrefix, appId: opts.appId, timestamp: now });
  const headers: Record<string, string> = { 'content-type': 'application/json', ...signature };
  if (opts.subMerchantId) headers['x-merch-id'] = opts.subMerchantId;

  const eventId = eventIdFor(type, opts.environment ?? DEFAULT_ENVIRONMENT, body);
  const requestId = requestIdOf(text);
  const results: SendResult[] = [];
  for (let i = 0; i < opts.times; i++) {
    const res = await fetch(new URL(target, opts.url), { method: 'POST', headers, body });
    results.push({ type, status: res.status, body: await res.text(), eventId, requestId });
  }
  return results;
}

export function parseEventTypes(arg: string | undefined): EventType[] {
  if (!arg) throw new UsageError(`name an event type, or "all": ${EVENT_TYPES.join(', ')}`);
  if (arg === 'all') return [...EVENT_TYPES];
  if (!isEventType(arg)) throw new UsageError(`unknown event type "${arg}"; one of: ${EVENT_TYPES.join(', ')}, all`);
  return [arg];
}

function requestIdOf(text: string): string | undefined {
  try {
    return requestIdsOf(JSON.parse(text))[0];
  } catch {
    return undefined; // not JSON: the receiver quarantines it
  }
}

function requireMerchant(id: string | undefined): string {
  if (!id) throw new UsageError('the legacy scheme signs the merchant id: pass --merchant-id');
  return id;
}

function legacyTimestamp(text: string, fallback: number): number {
  try {
    const ts = (JSON.parse(text) as { timestamp?: unknown }).timestamp;
    return typeof ts === 'number' ? ts : fallback;
  } catch {
    return fallback;
  }
}
