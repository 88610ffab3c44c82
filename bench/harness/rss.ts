import { readFileSync } from 'node:fs';

/** Resident set size of a process in bytes (Linux /proc), or NaN once it is gone. */
export function rssOf(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
    return kb === undefined ? Number.NaN : Number(kb) * 1024;
  } catch {
    return Number.NaN;
  }
}

export interface RssSample {
  /** Seconds since the sampler started. */
  t: number;
  bytes: number;
}

/** Samples a process's RSS on a timer, from outside the process so sampling costs it nothing. */
export class RssSampler {
  readonly samples: RssSample[] = [];
  private readonly started = performance.now();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly pid: number,
    everyMs: number,
  ) {
    this.sample();
    this.timer = setInterval(() => this.sample(), everyMs);
  }

  private sample(): void {
    const bytes = rssOf(this.pid);
    if (Number.isFinite(bytes)) this.samples.push({ t: (performance.now() - this.started) / 1000, bytes });
  }

  stop(): RssSample[] {
    clearInterval(this.timer);
    this.sample();
    return this.samples;
  }

  max(): number {
    return this.samples.reduce((m, s) => Math.max(m, s.bytes), 0);
  }
}

export const MB = 1024 * 1024;

export function toMB(bytes: number): number {
  return Math.round((bytes / MB) * 10) / 10;
}
