import { createSignatureCheck, isRejected } from './check';
import type { SignedRequest, VerifierOptions } from './options';
import type { VerifyResult } from './result';

export type Verifier = (req: SignedRequest) => VerifyResult;

/** Builds the notification verifier: pure, the clock comes in with the request. Both steps of check.ts at once. */
export function createVerifier(opts: VerifierOptions): Verifier {
  const check = createSignatureCheck(opts);
  return (req) => {
    const checked = check.headers(req.headers, req.nowMs);
    return isRejected(checked) ? checked : check.body(checked, req);
  };
}
