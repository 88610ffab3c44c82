import type { IncomingHttpHeaders } from 'node:http';
import { Webhook } from 'standardwebhooks';

export type ListenVerdict = { ok: true } | { ok: false; reason: string };

/**
 * Checks a forwarded request's Standard Webhooks signature with the `standardwebhooks` package, the
 * same library a merchant's system would use, under each given secret (several during a rotation).
 * The reason is the library's own words ("No matching signature found", "Message timestamp too old").
 */
export function verifyForwarded(secrets: readonly string[], body: Buffer, headers: IncomingHttpHeaders): ListenVerdict {
  const plain: Record<string, string> = {};
  for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
    const value = headers[name];
    if (typeof value === 'string') plain[name] = value;
  }
  const missing = ['webhook-id', 'webhook-timestamp', 'webhook-signature'].filter((n) => plain[n] === undefined);
  if (missing.length) return { ok: false, reason: `missing header ${missing.join(', ')}` };
  let reason = 'no secret given';
  for (const secret of secrets) {
    try {
      new Webhook(secret).verify(body, plain, { jsonParse: false });
      return { ok: true };
    } catch (err) {
      reason = (err as Error).message;
    }
  }
  return { ok: false, reason };
}
