import type { HeaderBag } from './headers';
import type { VerifierOptions } from './options';
import type { Rejected } from './result';
import { createSchemeSelector } from './scheme';
import { checkCurrentHeaders } from './verify-current';
import { checkLegacyHeaders } from './verify-legacy';

/** Judges a request by its headers alone; `undefined` means "read the body and verify". */
export type Precheck = (headers: HeaderBag, nowMs: number) => Rejected | undefined;

/**
 * Cheap rejection before the body is read: header presence, format, canonical signature encoding
 * and, in the current scheme, the timestamp window. It runs the very checks the full verifier runs
 * first, so a request it refuses would be refused by the verifier with the same reason and detail.
 */
export function createPrecheck(opts: VerifierOptions): Precheck {
  const schemeOf = createSchemeSelector(opts);
  return (headers, nowMs) => {
    const checked = schemeOf(headers) === 'current' ? checkCurrentHeaders(headers, nowMs, opts) : checkLegacyHeaders(headers, opts);
    return 'ok' in checked ? checked : undefined;
  };
}
