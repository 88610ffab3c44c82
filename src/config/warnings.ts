import { EVENT_TYPES } from '../events/table';
import { subscribes } from '../forwarding/target-schema';
import type { Config } from './schema';

/** Settings that are valid but probably not what a production deployment wants. */
export function configWarnings(config: Config): string[] {
  const warnings: string[] = [];
  if (config.role !== 'receiver') {
    const unrouted = EVENT_TYPES.filter((type) => !config.targets.some((t) => subscribes(t, type)));
    if (unrouted.length) {
      warnings.push(`no target subscribes to ${unrouted.join(', ')}: such events are acknowledged and kept as failed jobs of their queue (webhook_unrouted_events_total), never forwarded`);
    }
  }
  for (const t of config.targets) {
    if (new URL(t.url).protocol === 'http:') warnings.push(`target ${t.name} uses http:// (${t.url}): events and their headers cross the network unencrypted; use https:// unless it stays on this host`);
  }
  if (config.signatureSchemes.includes('legacy')) {
    warnings.push('the legacy v1.2 signature scheme is on: its signature covers neither the path nor a nonce; turn it off (SIGNATURE_SCHEMES=current) once the platform sends only the current scheme');
  }
  return warnings;
}
