/**
 * The base of every error the service expects and names: a stable `code` (the admin API's `error`
 * field, and what the CLI prints) and the HTTP `status` it is answered with. The admin API's error
 * handler and the CLI's formatter map it; nothing else decides a status for it.
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
