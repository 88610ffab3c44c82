import winston from 'winston';

export type Logger = winston.Logger;

/** JSON lines on stdout (or on the given stream, so tests can read what was logged). */
export function createLogger(level: string, stream?: NodeJS.WritableStream): Logger {
  return winston.createLogger({
    level,
    format: winston.format.combine(winston.format.timestamp(), winston.format.json()),
    transports: [stream ? new winston.transports.Stream({ stream }) : new winston.transports.Console()],
  });
}
