/**
 * What a failed PostgreSQL call means for the caller: whether trying again later can succeed, and one
 * line to show (the server's message with its SQLSTATE, never the statement's values or a URL's
 * credentials). Judged by SQLSTATE for the server's errors and by the socket's code for the rest.
 */
export interface PgFailure {
  /** True when the same statement may succeed later: the server is down, restarting, busy or locked. */
  transient: boolean;
  /** The server's SQLSTATE (`42501`), when the server answered. */
  sqlstate?: string;
  /** The socket's or client's code (`ECONNREFUSED`), when it did not. */
  code?: string;
  /** The message without credentials, with `(SQLSTATE xxxxx)` when there is one. */
  message: string;
}

/**
 * SQLSTATE classes and codes worth another attempt: connection exceptions (08), insufficient resources
 * (53: too many connections, disk full), operator intervention (57: shutdown, restart, a cancelled
 * statement), system errors (58), transaction rollbacks (40: serialization, deadlock), a lock not
 * available in time (55P03), a read-only replica or a standby being promoted (25006), and
 * authentication (28) and a missing database (3D000), which an operator fixes without touching the
 * events. Anything else (a permission, a missing table or column, a constraint other than the key,
 * a value the column refuses) fails the same way every time.
 */
const TRANSIENT_CLASSES = new Set(['08', '53', '57', '58', '40', '28']);
const TRANSIENT_CODES = new Set(['55P03', '25006', '3D000']);

/** `scheme://user:pass@host` → `scheme://***@host`, wherever a message quotes a URL. */
function scrub(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/\s@]+@/gi, '$1***@');
}

/** Whether a string is a SQLSTATE (five characters, digits and upper-case letters) rather than a socket code. */
function isSqlstate(code: string): boolean {
  return /^[0-9A-Z]{5}$/.test(code) && !code.startsWith('E');
}

/** Classifies an error thrown by node-postgres (`pg`): the server's (by SQLSTATE) or the connection's. */
export function pgFailure(err: unknown): PgFailure {
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : undefined;
  const text = scrub(typeof e.message === 'string' && e.message ? e.message : String(err));
  if (code !== undefined && isSqlstate(code)) {
    const transient = TRANSIENT_CLASSES.has(code.slice(0, 2)) || TRANSIENT_CODES.has(code);
    return { transient, sqlstate: code, message: `${text} (SQLSTATE ${code})` };
  }
  // No SQLSTATE: the connection could not be made or was lost, or the client gave up waiting.
  return { transient: true, ...(code === undefined ? {} : { code }), message: text };
}

/**
 * The SQLSTATE class of a PostgreSQL error (`08` connection exception, `57` operator intervention such
 * as a shutdown, `53` insufficient resources), or `network` for a socket that never reached it.
 */
export function pgErrorClass(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && isSqlstate(code)) return code.slice(0, 2);
  return 'network';
}
