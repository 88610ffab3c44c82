/**
 * The base of every error the service expects and names: a stable `code` (the admin API's `error`
 * field, and what the CLI prints) and the HTTP `status` it is answered with. The admin API's error
 * handler and the CLI's formatter map it; nothing else decides a status for it, and `exitCodeOf`
 * alone decides the exit code of a process it ends. Its one sibling: a delivery that must not be
 * retried fails with BullMQ's UnrecoverableError (forwarding/delivery-errors.ts), which is what the
 * worker library acts on. A bare Error is for what cannot happen.
 */
export abstract class ServiceError extends Error {
  abstract readonly code: string;
  abstract readonly status: number;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }

  /** The admin API's answer: `error` (the code), `message`, and any fields the error adds. */
  answer(): { error: string; message: string } & Record<string, unknown> {
    return { error: this.code, message: this.message };
  }
}

/** Exit codes other than 1, by error code: a configuration problem is EX_CONFIG (78, sysexits.h). */
const EXIT_CODES: Readonly<Record<string, number>> = { invalid_config: 78, defaults_not_chosen: 2 };

/** The exit code of a process (the service starting, a CLI command) that an error ends. */
export function exitCodeOf(err: unknown): number {
  return err instanceof ServiceError ? (EXIT_CODES[err.code] ?? 1) : 1;
}
