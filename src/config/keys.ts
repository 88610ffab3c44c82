import { readFileSync } from 'node:fs';
import type { KeyObject } from 'node:crypto';
import { createSourceAllowlist } from '../model/subnets';
import { parsePublicKeys, PublicKeyConfigError, type PlatformKey } from '../signature/keys';
import type { VerifierEnvironment } from '../signature/options';
import { acceptTest, environmentsOf } from './environments';
import { ConfigError } from './errors';
import type { Config } from './schema';

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
  return loadKeyEntries(entries, 'platformPublicKeys', opts).map((k) => k.key);
}

/**
 * A platform environment as the receiver uses it: the verifier's part (name, keys, app id, legacy
 * merchant id), and what a notification it verified must also satisfy.
 */
export interface PlatformEnvironment extends VerifierEnvironment {
  /** When set, the address the notification came from must be one it allows. */
  sourceAllowed?: (address: string | undefined) => boolean;
  /** When set, the body (with `merchantId`) must match this acceptance rule. */
  accept?: (payload: unknown, merchantId: string | undefined) => boolean;
}

/**
 * Resolves every environment's keys and compiles its rules. A key may belong to one environment
 * only: the environment of a notification is the one whose key verified it, so a key listed under
 * two would make that answer depend on the order of the list.
 */
export function loadEnvironments(
  config: Pick<Config, 'environments' | 'platformPublicKeys' | 'platformAppId' | 'merchantId'>,
  opts: LoadKeysOptions = {},
): PlatformEnvironment[] {
  const problems: string[] = [];
  const owners = new Map<string, { environment: string; source: string }>();
  const environments: PlatformEnvironment[] = [];
  for (const settings of environmentsOf(config)) {
    const setting = config.environments ? `environments.${settings.name}.publicKeys` : 'platformPublicKeys';
    let keys: PlatformKey[];
    try {
      keys = loadKeyEntries(settings.publicKeys, setting, opts);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(...err.problems);
      continue;
    }
    for (const { key, source } of keys) {
      const der = key.export({ type: 'spki', format: 'der' }).toString('base64');
      const owner = owners.get(der);
      if (owner && owner.environment !== settings.name) {
        problems.push(
          `${source}: the same key is listed for environment ${owner.environment} (${owner.source}); a key belongs ` +
            `to one environment only`,
        );
      }
      owners.set(der, { environment: settings.name, source });
    }
    const { accept, sourceCidrs } = settings;
    environments.push({
      name: settings.name,
      keys: keys.map((k) => k.key),
      ...(settings.appId !== undefined ? { appId: settings.appId } : {}),
      ...(settings.merchantId !== undefined ? { merchantId: settings.merchantId } : {}),
      ...(sourceCidrs ? { sourceAllowed: createSourceAllowlist(sourceCidrs) } : {}),
      ...(accept ? { accept: acceptTest(accept) } : {}),
    });
  }
  if (problems.length) throw new ConfigError(problems);
  return environments;
}

function loadKeyEntries(entries: readonly string[], setting: string, opts: LoadKeysOptions): PlatformKey[] {
  const problems: string[] = [];
  const keys: PlatformKey[] = [];
  entries.forEach((entry, i) => {
    const source = entry.startsWith('file:') ? entry.slice(5) : undefined;
    const label = source ?? `${setting}[${i}]`;
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
  return keys;
}

function warnAboutValidity(
  keys: readonly PlatformKey[],
  nowMs: number,
  warn: NonNullable<LoadKeysOptions['warn']>,
): void {
  for (const { source, validity } of keys) {
    if (!validity) continue;
    if (nowMs > validity.notAfter.getTime()) {
      warn('platform key certificate has expired; its key is still used: ask the platform for the current one', {
        source,
        notAfter: validity.notAfter.toISOString(),
      });
    } else if (nowMs < validity.notBefore.getTime()) {
      warn('platform key certificate is not valid yet; its key is used already', {
        source,
        notBefore: validity.notBefore.toISOString(),
      });
    }
  }
}
