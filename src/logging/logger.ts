import winston from 'winston';
import { createThrottledLog, type ThrottledLog } from './throttle';

/** Winston, plus `repeated` for errors that recur (Redis down, a target down): one line per interval with a count. */
export type Logger = winston.Logger & { repeated: ThrottledLog };

/** @defaultValue 60000: a 20-second Redis outage is then one line per distinct error. */
export const DEFAULT_REPEAT_INTERVAL_MS = 60_000;

/** JSON lines on stdout (or on the given stream, so tests can read what was logged). */
export function createLogger(level: string, stream?: NodeJS.WritableStream, repeatIntervalMs = DEFAULT_REPEAT_INTERVAL_MS): Logger {
  const logger = winston.createLogger({
    level,
    format: winston.format.combine(winston.format.timestamp(), winston.format.json()),
    transports: [stream ? new winston.transports.Stream({ stream }) : new winston.transports.Console()],
  });
  return Object.assign(logger, { repeated: createThrottledLog(logger, repeatIntervalMs) });
}
