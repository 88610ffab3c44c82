import type { SignedRequest, VerifierOptions } from './options';
import type { VerifyResult } from './result';
import { createSchemeSelector } from './scheme';
import { verifyCurrent } from './verify-current';
import { verifyLegacy } from './verify-legacy';

export type Verifier = (req: SignedRequest) => VerifyResult;

/** Builds the notification verifier: pure, the clock comes in with the request. */
export function createVerifier(opts: VerifierOptions): Verifier {
  const schemeOf = createSchemeSelector(opts);
  return (req) => (schemeOf(req.headers) === 'current' ? verifyCurrent(req, opts) : verifyLegacy(req, opts));
}
