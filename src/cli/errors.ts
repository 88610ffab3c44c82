import { ServiceError } from '../model/errors';

/** Exit codes other than 1, by error code: a configuration problem is EX_CONFIG (78, sysexits.h). */
const EXIT_CODES: Readonly<Record<string, number>> = { invalid_config: 78, defaults_not_chosen: 2 };

/** The CLI's one formatter for a command that failed: the line it prints and its exit code. */
export function cliFailure(err: unknown): { line: string; exitCode: number } {
  const message = err instanceof Error ? err.message : String(err);
  return { line: `error: ${message}`, exitCode: err instanceof ServiceError ? (EXIT_CODES[err.code] ?? 1) : 1 };
}

/** The error's code when it is a ServiceError, for a command that answers some of them in its own words. */
export function errorCode(err: unknown): string | undefined {
  return err instanceof ServiceError ? err.code : undefined;
}
