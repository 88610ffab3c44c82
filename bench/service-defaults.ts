import { loadConfig } from '../src/config/load';
import type { Config } from '../src/config/schema';
import type { IngestOptions } from '../src/queue/ingest';

/** The service's default configuration (config/default.yaml), for settings the harness must mirror. */
export function serviceDefaults(): Config {
  return loadConfig({ PLATFORM_PUBLIC_KEYS: 'unused-by-the-harness' });
}

/** The producer options the receiver derives from its configuration (src/receiver.ts). */
export function ingestOptionsFor(config: Config, prefix: string): IngestOptions {
  // A variable, not a literal in the return, so a field an older IngestOptions lacks is no error.
  const options = {
    prefix,
    enqueueTimeoutMs: 30_000,
    dedupWindowMs: config.dedupWindowMs,
    retention: config.retention,
    legacyBindingTtlMs: 2 * config.timestampToleranceMs,
  };
  return options;
}
