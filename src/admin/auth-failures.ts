export interface FailureWindowOptions {
  /** Failures allowed within the window before the address is refused. @defaultValue 10 */
  max?: number;
  /** @defaultValue 60000 */
  windowMs?: number;
  /** Addresses remembered at once; the least recently failing is forgotten first. @defaultValue 10000 */
  maxAddresses?: number;
  now?: () => number;
}

/**
 * Failed admin logins per address in a sliding window, in memory: after `max` failures within
 * `windowMs` the address waits until the oldest of them leaves the window. At most `max` times are
 * kept per address and at most `maxAddresses` addresses, so a flood of sources cannot grow it.
 */
export function createFailureWindow(opts: FailureWindowOptions = {}) {
  const max = opts.max ?? 10;
  const windowMs = opts.windowMs ?? 60_000;
  const maxAddresses = opts.maxAddresses ?? 10_000;
  const now = opts.now ?? Date.now;
  const failures = new Map<string, number[]>();

  function recent(address: string, at: number): number[] {
    const times = (failures.get(address) ?? []).filter((t) => t > at - windowMs);
    if (times.length === 0) failures.delete(address);
    return times;
  }

  return {
    /** Milliseconds until the address may try again; 0 when it may now. */
    blockedFor(address: string): number {
      const at = now();
      const times = recent(address, at);
      return times.length >= max ? times[times.length - max]! + windowMs - at : 0;
    },
    /** Counts a failure; returns true when this one is the failure that blocks the address. */
    record(address: string): boolean {
      const at = now();
      const times = [...recent(address, at), at].slice(-max);
      failures.delete(address); // re-inserted last: Map order is least recently failing first
      failures.set(address, times);
      if (failures.size > maxAddresses) failures.delete(failures.keys().next().value!);
      return times.length === max;
    },
    get size(): number {
      return failures.size;
    },
  };
}

export type FailureWindow = ReturnType<typeof createFailureWindow>;
