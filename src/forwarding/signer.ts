import { Webhook } from 'standardwebhooks';
import { secretsOf, type Target } from './target-schema';

/** Builds the `webhook-signature` header value for one forwarded request. */
export type RequestSigner = (msgId: string, at: Date, body: Buffer) => string;

/**
 * One `v1,` signature per secret, space-separated, as Standard Webhooks specifies: during a rotation
 * (`secret: [whsec_new, whsec_old]`) the merchant's system verifies with whichever secret it holds.
 * Undefined when the target has no secret (its requests are not signed).
 */
export function createSigner(target: Pick<Target, 'secret'>): RequestSigner | undefined {
  const hooks = secretsOf(target).map((secret) => new Webhook(secret));
  if (hooks.length === 0) return undefined;
  return (msgId, at, body) => hooks.map((hook) => hook.sign(msgId, at, body)).join(' ');
}
