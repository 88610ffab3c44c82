import { maskUrl } from '../logging/mask-url';
import { EVENT_TYPES } from '../model/event-table';
import { subscribes } from '../model/target-schema';
import { destinationUrls, destinationUsesTls } from '../model/destination-schema';
import { isLoopbackUrl } from '../model/target-url';
import { environmentsOf } from './environments';
import type { Config } from './schema';

/**
 * A notify path no other merchant can guess: a segment of at least 16 characters mixing letters and
 * digits. The current scheme signs the path, so another merchant's notification, signed for its own
 * callback path, does not verify on ours.
 */
export function hasSecretBasePath(basePath: string): boolean {
  return basePath.split('/').some((segment) => segment.length >= 16 && /[A-Za-z]/.test(segment) && /\d/.test(segment));
}

/** An environment whose name says production (production, eu-production, prod-eu …). */
function isProduction(name: string): boolean {
  return /prod/.test(name);
}

/** Whether a filter-syntax rule tests `field` (or a path under it), at its top or inside `$and`, `$or`, `$nor`. */
function namesField(rule: unknown, field: string): boolean {
  if (Array.isArray(rule)) return rule.some((r) => namesField(r, field));
  if (typeof rule !== 'object' || rule === null) return false;
  return Object.entries(rule).some(([key, value]) =>
    key.startsWith('$') ? namesField(value, field) : key === field || key.startsWith(`${field}.`),
  );
}

/**
 * An `accept` rule that tests `merchantId`, which the current scheme does not sign (the `X-Merch-Id`
 * header): logged at start-up too, since such a rule looks like a defence and is not one.
 */
export function unsignedAcceptWarnings(config: Config): string[] {
  if (config.role === 'worker' || !config.signatureSchemes.includes('current')) return [];
  return environmentsOf(config)
    .filter((env) => env.accept !== undefined && namesField(env.accept, 'merchantId'))
    .map(
      (env) =>
        `environment ${env.name}'s accept rule tests merchantId, which under the current signature scheme is the ` +
        `unsigned X-Merch-Id header: another merchant's genuine notification re-sent with our X-Merch-Id ` +
        `satisfies it; test a field of the signed body instead (e.g. { "data.merchant_no": { $in: [M100023] } })`,
    );
}

/** Settings that are valid but probably not what a production deployment wants. */
export function configWarnings(config: Config): string[] {
  const warnings: string[] = [];
  if (config.role !== 'receiver') {
    const unrouted = EVENT_TYPES.filter((type) => !config.targets.some((t) => subscribes(t, type)));
    if (unrouted.length) {
      warnings.push(
        `no target subscribes to ${unrouted.join(', ')}: such events are acknowledged and kept as failed jobs of ` +
          `their queue (webhook_unrouted_events_total), never forwarded`,
      );
    }
  }
  for (const t of config.targets) {
    // http:// to this host (127.0.0.0/8, localhost, [::1]) is allowed as documented: nothing crosses a network.
    if (t.url !== undefined && new URL(t.url).protocol === 'http:' && !isLoopbackUrl(new URL(t.url)))
      warnings.push(
        `target ${t.name} uses http:// (${maskUrl(t.url)}): events and their headers cross the network ` +
          `unencrypted; use https:// unless it stays on this host`,
      );
    if (
      t.destination &&
      !destinationUsesTls(t.destination) &&
      !destinationUrls(t.destination).every((u) => isLoopbackUrl(new URL(u)))
    ) {
      warnings.push(
        `target ${t.name} publishes to its ${t.destination.type} broker without TLS: events, their signatures and ` +
          `the broker credentials cross the network unencrypted; use amqps://, tls://, rediss:// or ` +
          `?sslmode=verify-full unless the broker stays on this host`,
      );
    }
  }
  if (config.role !== 'worker' && !hasSecretBasePath(config.callbackBasePath)) {
    for (const env of environmentsOf(config)) {
      if (!isProduction(env.name) || env.accept) continue;
      warnings.push(
        `environment ${env.name} has neither an accept rule nor a secret CALLBACK_BASE_PATH (a segment of 16+ random ` +
          `letters and digits): the platform's key signs every merchant's notifications, so another merchant's ` +
          `genuine ones verify here too (docs/security.md, "Whose notification it is")`,
      );
    }
  }
  warnings.push(...unsignedAcceptWarnings(config));
  if (config.signatureSchemes.includes('legacy')) {
    warnings.push(
      'the legacy v1.2 signature scheme is on: its signature covers neither the path nor a nonce; turn it off ' +
        '(SIGNATURE_SCHEMES=current) once the platform sends only the current scheme',
    );
  }
  return warnings;
}
