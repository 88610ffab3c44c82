import type winston from 'winston';

type Level = 'error' | 'warn' | 'info';

export interface ThrottledLog {
  /**
   * Logs the first occurrence of `key` at once; further ones within the interval are counted and
   * written as one line (`repeated: n`) when the interval ends. A key that stays quiet for a whole
   * interval starts afresh.
   */
  (level: Level, key: string, message: string, meta?: Record<string, unknown>): void;
  /** Writes what is pending now (at shutdown). */
  flush(): void;
}

interface Window {
  level: Level;
  message: string;
  meta: Record<string, unknown>;
  repeated: number;
  timer: NodeJS.Timeout;
}

/**
 * A Redis outage or a target that is down makes every connection, worker and attempt report the same
 * error over and over (380 lines in 20 s, measured); what an operator needs is that it happened and
 * how often. One line per key per interval, with the count.
 */
export function createThrottledLog(logger: winston.Logger, intervalMs: number): ThrottledLog {
  const windows = new Map<string, Window>();

  function close(key: string): void {
    const w = windows.get(key);
    if (!w) return;
    clearTimeout(w.timer);
    windows.delete(key);
    if (w.repeated > 0)
      logger[w.level](`${w.message} (repeated)`, { ...w.meta, repeated: w.repeated, withinMs: intervalMs });
  }

  function open(key: string, level: Level, message: string, meta: Record<string, unknown>): void {
    const timer = setTimeout(() => {
      const w = windows.get(key);
      close(key);
      // Still happening: keep counting in a fresh window rather than logging the next one at once.
      if (w && w.repeated > 0) open(key, level, message, w.meta);
    }, intervalMs);
    timer.unref();
    windows.set(key, { level, message, meta, repeated: 0, timer });
  }

  const log = ((level, key, message, meta = {}) => {
    const w = windows.get(key);
    if (w) {
      w.repeated++;
      w.meta = meta;
      return;
    }
    logger[level](message, meta);
    open(key, level, message, meta);
  }) as ThrottledLog;
  log.flush = () => {
    for (const key of [...windows.keys()]) close(key);
  };
  return log;
}
