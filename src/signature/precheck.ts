import { createSignatureCheck, isRejected } from './check';
import type { HeaderBag } from './headers';
import type { VerifierOptions } from './options';
import type { Rejected } from './result';

/** Judges a request by its headers alone; `undefined` means "read the body and verify". */
export type Precheck = (headers: HeaderBag, nowMs: number) => Rejected | undefined;

/**
 * Cheap rejection before the body is read: header presence, format, canonical signature encoding
 * and, in the current scheme, the timestamp window. It is the first step of the verifier itself
 * (check.ts), so a request it refuses is refused by the verifier with the same reason and detail.
 * The notify path runs the two steps directly, keeping what the first returned for the second.
 */
export function createPrecheck(opts: VerifierOptions): Precheck {
  const check = createSignatureCheck(opts);
  return (headers, nowMs) => {
    const checked = check.headers(headers, nowMs);
    return isRejected(checked) ? checked : undefined;
  };
}
