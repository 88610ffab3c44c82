import path from 'node:path';
import type { BenchOptions } from './options';
import type { BenchRedis } from './redis';
import type { Sink } from './sink-control';
import type { Workdir } from './workdir';

/** What every phase gets: the options, the shared Redis and sink, the run's temporary folder. */
export interface BenchContext {
  options: BenchOptions;
  redis: BenchRedis;
  sink: Sink;
  workdir: Workdir;
  /** Whether the service has delivery workers (src/forwarding) to measure. */
  forwarding: boolean;
  log(message: string): void;
}

/** Where a service run's log lines go: a file in the results folder when asked for, else discarded. */
export function serviceLogFile(ctx: BenchContext, label: string): string | undefined {
  return ctx.options.keepServiceLogs ? path.join(ctx.options.resultsDir, 'logs', `${label}.log`) : undefined;
}

export const FORWARDING_MISSING = 'forwarding not available (no src/forwarding in this build)';
