import type { SignedRequest, VerifierOptions } from './options';
import type { VerifyResult } from './result';
import { verifyCurrent } from './verify-current';
import { LEGACY_HEADERS, verifyLegacy } from './verify-legacy';

export type Verifier = (req: SignedRequest) => VerifyResult;

/**
 * Builds the notification verifier. A request carrying any current-scheme header is judged by the
 * current scheme; otherwise a request with a v1.2 `signature` header is judged by the legacy scheme
 * when that is enabled.
 */
export function createVerifier(opts: VerifierOptions): Verifier {
  const current = opts.schemes.includes('current');
  const legacy = opts.schemes.includes('legacy');
  const currentNames = ['timestamp', 'nonce', 'sign'].map((s) => `${opts.headerPrefix}-${s}`);
  return (req) => {
    const looksCurrent = currentNames.some((n) => req.headers[n] !== undefined);
    if (legacy && !looksCurrent && req.headers[LEGACY_HEADERS.signature] !== undefined) {
      return verifyLegacy(req, opts);
    }
    if (current) return verifyCurrent(req, opts);
    return verifyLegacy(req, opts);
  };
}
