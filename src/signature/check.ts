import type { HeaderBag } from './headers';
import type { SignedRequest, VerifierOptions } from './options';
import type { Rejected, VerifyResult } from './result';
import { createSchemeSelector } from './scheme';
import { checkCurrentHeaders, verifyCurrentBody, type CurrentHeaders } from './verify-current';
import { checkLegacyHeaders, verifyLegacyBody, type LegacyHeaders } from './verify-legacy';

/** A request's signature headers once they passed every check that needs no body. */
export type CheckedHeaders = CurrentHeaders | LegacyHeaders;

/**
 * Verification in its two steps, so a request's headers are judged once: `headers` before the body is
 * read (the cheap refusal), `body` after, with what `headers` returned. The precheck and the verifier
 * are both made of these, so they refuse the same headers with the same reason and detail.
 */
export interface SignatureCheck {
  headers(headers: HeaderBag, nowMs: number): CheckedHeaders | Rejected;
  body(checked: CheckedHeaders, req: SignedRequest): VerifyResult;
}

export function createSignatureCheck(opts: VerifierOptions): SignatureCheck {
  const schemeOf = createSchemeSelector(opts);
  return {
    headers: (headers, nowMs) =>
      schemeOf(headers) === 'current' ? checkCurrentHeaders(headers, nowMs, opts) : checkLegacyHeaders(headers, opts),
    body: (checked, req) =>
      checked.scheme === 'current' ? verifyCurrentBody(checked, req, opts) : verifyLegacyBody(checked, req, opts),
  };
}

export function isRejected(checked: CheckedHeaders | Rejected): checked is Rejected {
  return 'ok' in checked;
}
