import { Writable } from 'node:stream';
import winston from 'winston';
import { createThrottledLog, type ThrottledLog } from './throttle';

export type LogLevel = 'error' | 'warn' | 'info' | 'debug';

/**
 * Writes one line, byte for byte what winston would write for `logger[level](message, fields)`, but
 * without winston's stream pipeline (an info object through a Transform, a format chain and a
 * transport): for the lines written once per notification and once per delivery. Fields must be
 * plain JSON values (strings, numbers, booleans, null, undefined, flat objects of those).
 */
export type RecordLine = (level: LogLevel, message: string, fields: Record<string, unknown>) => void;

/**
 * Winston, plus `repeated` for errors that recur (Redis down, a target down): one line per interval with a count;
 * `record` for hot lines.
 */
export type Logger = winston.Logger & { repeated: ThrottledLog; record: RecordLine };

/** @defaultValue 60000: a 20-second Redis outage is then one line per distinct error. */
export const DEFAULT_REPEAT_INTERVAL_MS = 60_000;

export interface LoggerOptions {
  repeatIntervalMs?: number;
  /**
   * Gathers the lines of {@link BATCH_MS} into one write (at most {@link BATCH_BYTES} held): at
   * thousands of lines a second, a write per line was the largest cost of logging, and a write per turn
   * of the event loop still one system call per few lines. Held lines go out when the interval ends,
   * and at exit. Default: on for stdout, off for a given stream.
   */
  batched?: boolean;
}

/** Lines held before a batch is written at once, however little time has passed. */
export const BATCH_BYTES = 64 * 1024;

/**
 * How long a line may be held: short enough that a line reads as immediate to someone watching the
 * log, and what a process killed outright (SIGKILL, the kernel's OOM killer) can lose; an exit of
 * its own writes what is held.
 */
export const BATCH_MS = 20;

/** JSON lines on stdout (or on the given stream, so tests can read what was logged). */
export function createLogger(
  level: string,
  stream?: NodeJS.WritableStream,
  { repeatIntervalMs = DEFAULT_REPEAT_INTERVAL_MS, batched = stream === undefined }: LoggerOptions = {},
): Logger {
  const out = stream ?? process.stdout;
  const write = batched ? batchedWriter(out) : (line: string) => void out.write(line);
  const logger = winston.createLogger({
    level,
    format: winston.format.combine(winston.format.timestamp(), winston.format.json()),
    // One writer for winston's lines and `record`'s, so batching keeps their order.
    transports: [
      new winston.transports.Stream({
        stream: new Writable({
          decodeStrings: false,
          write: (chunk: string, _encoding, done) => (write(chunk), done()),
        }),
      }),
    ],
  });
  // The one transport has no level of its own, so a line is enabled when its level is within the logger's: what
  // winston's isLevelEnabled decides after walking the transports through a getter that builds an array per call.
  const record: RecordLine = (lineLevel, message, fields) => {
    const levels = logger.levels;
    if (logger.silent || !(levels[lineLevel]! <= levels[logger.level]!)) return;
    write(`${recordLine(fields, lineLevel, message, new Date().toISOString())}\n`);
  };
  return Object.assign(logger, { repeated: createThrottledLog(logger, repeatIntervalMs), record });
}

/**
 * Writes what {@link BATCH_MS} logged in one write; flushes on exit, when stdout still takes a synchronous write. The
 * timer does not keep the process alive: the exit's flush writes what it held.
 */
function batchedWriter(out: NodeJS.WritableStream): (line: string) => void {
  let held = '';
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (held === '') return;
    const lines = held;
    held = '';
    out.write(lines);
  };
  process.once('exit', flush);
  return (line) => {
    if (held === '') timer = setTimeout(flush, BATCH_MS).unref();
    held += line;
    if (held.length >= BATCH_BYTES) flush();
  };
}

/**
 * The fields with the line's own three members over them, as JSON with the keys sorted, as winston's json format
 * (safe-stable-stringify, deterministic) writes it. Without a merged copy: written once per delivery, and a handful of
 * keys sorted in place costs less than the copy and `sort()`'s own work array.
 */
function recordLine(fields: Record<string, unknown>, level: string, message: string, timestamp: string): string {
  const keys = Object.keys(fields);
  for (const own of LINE_KEYS) if (!Object.hasOwn(fields, own)) keys.push(own);
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i]!;
    let j = i - 1;
    for (; j >= 0 && keys[j]! > key; j--) keys[j + 1] = keys[j]!;
    keys[j + 1] = key;
  }
  const sorted: Record<string, unknown> = {};
  for (const key of keys) {
    const value = key === 'level' ? level : key === 'message' ? message : key === 'timestamp' ? timestamp : fields[key];
    sorted[key] =
      value !== null && typeof value === 'object' && !Array.isArray(value)
        ? sortedKeys(value as Record<string, unknown>)
        : value;
  }
  return JSON.stringify(sorted);
}

const LINE_KEYS = ['level', 'message', 'timestamp'] as const;

function sortedKeys(info: Record<string, unknown>): Record<string, unknown> {
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(info).sort()) {
    const value = info[key];
    sorted[key] =
      value !== null && typeof value === 'object' && !Array.isArray(value)
        ? sortedKeys(value as Record<string, unknown>)
        : value;
  }
  return sorted;
}
