import { secretsOf } from '../model/target-schema';
import type { Config } from './schema';

/** A value copied from deploy/env.example and never filled in (`change-me-…`). */
function isPlaceholder(value: string | undefined): boolean {
  return value !== undefined && value.split('/').some((part) => /^change-me/i.test(part));
}

/**
 * Credentials that are missing or still the env example's placeholders: the admin port without a
 * token, a target whose requests carry no signature, a secret left as `change-me-…` (Grafana's
 * password too, which Compose reads from the same `.env`).
 */
export function credentialWarnings(config: Config, env: Record<string, string | undefined>): string[] {
  const warnings: string[] = [];
  if (config.adminToken === undefined)
    warnings.push(
      'no ADMIN_TOKEN: the admin API and its protected routes answer 503 until one is set (openssl rand -hex 24); ' +
        'ADMIN_USER and ADMIN_PASSWORD open the console in a browser',
    );
  const placeholders = [
    ['ADMIN_TOKEN', config.adminToken],
    ['ADMIN_PASSWORD', config.adminPassword],
    ['REDIS_URL', config.redisUrl.replace(/^[a-z]+:\/\/[^:@/]*:([^@/]*)@.*$/i, '$1')],
    ['GRAFANA_ADMIN_PASSWORD', env.GRAFANA_ADMIN_PASSWORD],
    ['CALLBACK_BASE_PATH', config.callbackBasePath],
  ] as const;
  for (const [name, value] of placeholders)
    if (isPlaceholder(value))
      warnings.push(`${name} is still the env example's placeholder: set a long random value (openssl rand -hex 24)`);
  for (const t of config.targets)
    if (secretsOf(t).length === 0)
      warnings.push(
        `target ${t.name} has no secret: its requests carry no webhook-signature, so ${t.name} cannot tell them from ` +
          "anyone else's (give it a whsec_ secret, docs/forwarding.md)",
      );
  return warnings;
}
