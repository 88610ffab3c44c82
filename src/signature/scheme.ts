import type { HeaderBag } from './headers';
import type { VerifierOptions } from './options';
import type { SignatureScheme } from '../model/jobs';
import { LEGACY_HEADERS } from './verify-legacy';

/**
 * Picks the scheme that judges a request. A request carrying any current-scheme header is judged by
 * the current scheme; otherwise a request with a v1.2 `signature` header is judged by the legacy
 * scheme when that is enabled.
 */
export function createSchemeSelector(opts: VerifierOptions): (headers: HeaderBag) => SignatureScheme {
  const current = opts.schemes.includes('current');
  const legacy = opts.schemes.includes('legacy');
  const currentNames = ['timestamp', 'nonce', 'sign'].map((s) => `${opts.headerPrefix}-${s}`);
  return (headers) => {
    const looksCurrent = currentNames.some((n) => headers[n] !== undefined);
    if (legacy && !looksCurrent && headers[LEGACY_HEADERS.signature] !== undefined) return 'legacy';
    return current ? 'current' : 'legacy';
  };
}
