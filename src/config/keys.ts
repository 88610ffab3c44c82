import { readFileSync } from 'node:fs';
import type { KeyObject } from 'node:crypto';
import { parsePublicKeys, PublicKeyConfigError, type PlatformKey } from '../signature/keys';
import { ConfigError } from './errors';

export interface LoadKeysOptions {
  /** Told once per certificate outside its validity period; the key is still used. */
  warn?: (message: string, fields: Record<string, unknown>) => void;
  /** @defaultValue `Date.now` */
  clock?: () => number;
}

/**
 * Resolves the configured platform keys. An entry is inline key text, or `file:<path>` (a file with
 * Base64 DER, PEM keys or certificates). Every problem is collected into one ConfigError that names
 * the entry; RSA keys under 2048 bits are refused.
 *
 * An expired (or not yet valid) certificate is only warned about: the platform signs with the key,
 * not the certificate, and refusing to start would stop all notifications over a date in a wrapper.
 */
export function loadPlatformKeys(entries: readonly string[], opts: LoadKeysOptions = {}): KeyObject[] {
  const problems: string[] = [];
  const keys: PlatformKey[] = [];
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
  if (opts.warn) warnAboutValidity(keys, (opts.clock ?? Date.now)(), opts.warn);
  return keys.map((k) => k.key);
}

function warnAboutValidity(keys: readonly PlatformKey[], nowMs: number, warn: NonNullable<LoadKeysOptions['warn']>): void {
  for (const { source, validity } of keys) {
    if (!validity) continue;
    if (nowMs > validity.notAfter.getTime()) {
      warn('platform key certificate has expired; its key is still used: ask the platform for the current one', { source, notAfter: validity.notAfter.toISOString() });
    } else if (nowMs < validity.notBefore.getTime()) {
      warn('platform key certificate is not valid yet; its key is used already', { source, notBefore: validity.notBefore.toISOString() });
    }
  }
}
