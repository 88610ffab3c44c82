import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticksPerSecond: number | undefined;

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** CPU time (user + system) a process has used so far, in milliseconds (Linux /proc), or NaN once it is gone. */
export function cpuMsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may contain spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return ((utime + stime) * 1000) / clockTicks();
  } catch {
    return Number.NaN;
  }
}

/**
 * Where the cores went during a measured run: CPU time of each process as a percentage of one core.
 * On a shared 2-core machine this tells a slow subject from a starved one, and CPU ms per request is
 * a figure a noisy neighbour disturbs much less than throughput.
 */
export class CpuMeter {
  private readonly startedAt = performance.now();
  private readonly start: Map<string, number>;

  constructor(private readonly pids: Record<string, number>) {
    this.start = new Map(Object.entries(pids).map(([name, pid]) => [name, cpuMsOf(pid)]));
  }

  /** CPU ms used by each named process since the meter started, and the wall time in ms. */
  read(): { wallMs: number; cpuMs: Record<string, number> } {
    const cpuMs: Record<string, number> = {};
    for (const [name, pid] of Object.entries(this.pids))
      cpuMs[name] = Math.round(cpuMsOf(pid) - (this.start.get(name) ?? Number.NaN));
    return { wallMs: performance.now() - this.startedAt, cpuMs };
  }
}

/**
 * Turns a meter reading and the load generator's own CPU time into the figures the results keep.
 * `activeMs`: the span in which the requests were answered, when the reading also covers a start-up
 * and a tail in which the processes idle (a saturating run); percentages are of that span.
 */
export function cpuFigures(
  reading: { wallMs: number; cpuMs: Record<string, number> },
  loadGeneratorCpuMs: number,
  requests: number,
  activeMs = reading.wallMs,
) {
  const pct = (ms: number | undefined) => Math.round(((ms ?? Number.NaN) / activeMs) * 1000) / 10;
  const perRequest = (ms: number | undefined) => Math.round(((ms ?? Number.NaN) / Math.max(1, requests)) * 1000) / 1000;
  return {
    subjectPct: pct(reading.cpuMs.subject),
    redisPct: pct(reading.cpuMs.redis),
    loadGeneratorPct: pct(loadGeneratorCpuMs),
    subjectMsPerRequest: perRequest(reading.cpuMs.subject),
    redisMsPerRequest: perRequest(reading.cpuMs.redis),
  };
}
