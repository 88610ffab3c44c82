import { exitCodeOf, ServiceError } from '../model/errors';

/** The CLI's one formatter for a command that failed: the line it prints and its exit code. */
export function cliFailure(err: unknown): { line: string; exitCode: number } {
  const message = err instanceof Error ? err.message : String(err);
  return { line: `error: ${message}`, exitCode: exitCodeOf(err) };
}

/** The error's code when it is a ServiceError, for a command that answers some of them in its own words. */
export function errorCode(err: unknown): string | undefined {
  return err instanceof ServiceError ? err.code : undefined;
}

/** A command given wrongly (a missing or malformed argument, an unknown name): the line says what to give. */
export class UsageError extends ServiceError {
  readonly code = 'usage';
  readonly status = 400;
}
