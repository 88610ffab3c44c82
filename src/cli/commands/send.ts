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
  /** `path=value` settings applied to the body before it is signed, e.g. `data.merchant_no=M1` (values are strings). */
  sets?: readonly string[];
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
  const given = opts.bodyFile
    ? readFileSync(opts.bodyFile === '-' ? 0 : opts.bodyFile, 'utf8')
    : sampleBody(type, opts.scheme === 'legacy' ? { timestamp: now, merchantId: opts.merchantId } : {});
  const text = opts.sets?.length ? withSettings(given, opts.sets) : given;
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

/** The body with each `path=value` set (objects on the path made when missing); the rest as it was. */
export function withSettings(text: string, sets: readonly string[]): string {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new UsageError('--set needs a JSON body');
  }
  for (const setting of sets) {
    const at = setting.indexOf('=');
    if (at <= 0) throw new UsageError(`--set takes path=value, e.g. data.merchant_no=M100023 (got "${setting}")`);
    const parts = setting.slice(0, at).split('.');
    if (parts.some((p) => p === '' || p === '__proto__' || p === 'constructor' || p === 'prototype'))
      throw new UsageError(`--set: "${setting.slice(0, at)}" is not a field path`);
    let node = body as Record<string, unknown>;
    for (const part of parts.slice(0, -1)) {
      const next = node[part];
      if (typeof next !== 'object' || next === null || Array.isArray(next)) node[part] = {};
      node = node[part] as Record<string, unknown>;
    }
    node[parts.at(-1)!] = setting.slice(at + 1);
  }
  return JSON.stringify(body);
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
