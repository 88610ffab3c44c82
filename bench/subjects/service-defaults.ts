import { loadConfig } from '../../src/config/load';
import type { Config } from '../../src/config/schema';
import { keyPrefix } from '../../src/model/names';
import { pipelineOptions, type PipelineOptions } from '../../src/pipeline/pipeline';

/** The service's default configuration (config/default.yaml), for settings the harness must mirror. */
export function serviceDefaults(): Config {
  return loadConfig({ PLATFORM_PUBLIC_KEYS: 'unused-by-the-harness' });
}

/** The pipeline options the service derives from its configuration, for QUEUE_PREFIX `prefix`; adds may wait longer. */
export function pipelineOptionsFor(config: Config, prefix: string): PipelineOptions {
  return { ...pipelineOptions(config), prefix: keyPrefix(prefix), enqueueTimeoutMs: 30_000 };
}
