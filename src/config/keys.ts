import { readFileSync } from 'node:fs';
import type { KeyObject } from 'node:crypto';
import { parsePublicKeys, PublicKeyConfigError } from '../signature/keys';
import { ConfigError } from './errors';

/**
 * Resolves the configured platform keys. An entry is inline key text, or `file:<path>` (a file with
 * Base64 DER, PEM keys or certificates).
 */
export function loadPlatformKeys(entries: readonly string[]): KeyObject[] {
  const problems: string[] = [];
  const keys: KeyObject[] = [];
  entries.forEach((entry, i) => {
    const source = entry.startsWith('file:') ? entry.slice(5) : undefined;
    const label = source ?? `platformPublicKeys[${i}]`;
    try {
      const text = source ? readFileSync(source, 'utf8') : entry;
      keys.push(...parsePublicKeys(text, label));
    } catch (err) {
      if (err instanceof PublicKeyConfigError) problems.push(err.message);
      else problems.push(`${label}: cannot read (${(err as Error).message})`);
    }
  });
  if (problems.length) throw new ConfigError(problems);
  return keys;
}
