import { createHmac } from 'node:crypto';
import { secretsOf, type Target } from '../model/target-schema';
import { SECRET_PREFIX } from '../model/target-url';

/** Builds the `webhook-signature` header value for one forwarded request. */
export type RequestSigner = (msgId: string, at: Date, body: string | Buffer) => string;

/**
 * One `v1,` signature per secret, space-separated, as Standard Webhooks specifies: during a rotation
 * (`secret: [whsec_new, whsec_old]`) the merchant's system verifies with whichever secret it holds.
 * Undefined when the target has no secret (its requests are not signed).
 *
 * HMAC-SHA256 over `{msgId}.{seconds}.` and the body's bytes, with node:crypto: the `standardwebhooks`
 * package's `sign` turns a Buffer into a UTF-8 string first (a body that is not UTF-8 would be signed
 * over other bytes than those sent) and hashes in JavaScript. The tests verify our signatures with
 * that package, for the UTF-8 bodies it handles.
 */
export function createSigner(target: Pick<Target, 'secret'>): RequestSigner | undefined {
  const keys = secretsOf(target).map((secret) => Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64'));
  if (keys.length === 0) return undefined;
  return (msgId, at, body) => {
    const signed = `${msgId}.${Math.floor(at.getTime() / 1000)}.`;
    return keys.map((key) => `v1,${createHmac('sha256', key).update(signed).update(body).digest('base64')}`).join(' ');
  };
}
