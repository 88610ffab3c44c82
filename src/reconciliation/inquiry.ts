import type { ApiEnvironment } from '../config/api-environments';
import { inquiryPathOf, sendsMerchantId } from '../model/event-table';
import { signPlatformRequest, verifyPlatformResponse, type ResponseRefusal } from '../signing/platform-client';
import type { InquiryFunctions, InquirySubject } from './functions';

/** What one inquiry found: a believed answer, an answer not believed, or no answer. */
export type InquiryResult =
  | {
      kind: 'answered';
      status: number;
      body: string;
      nonce: string;
      path: string;
      signatureHeaders: Record<string, string>;
    }
  | { kind: 'refused'; reason: ResponseRefusal | 'replayed'; status: number; detail: string }
  | { kind: 'failed'; detail: string };

export interface InquiryDeps {
  environment: ApiEnvironment;
  functions: InquiryFunctions;
  /** Claims an answer's nonce; false when it was seen before. */
  claimNonce(nonce: string): Promise<boolean>;
  toleranceMs: number;
  headerPrefix: string;
  clock: () => number;
}

/** What the service reads of an answer at most: the platform's answers are small envelopes. */
const MAX_ANSWER_BYTES = 1024 * 1024;

/**
 * One signed inquiry about an expectation (spec 5.1), and the check of the platform's answer (rule 6):
 * believed only when its signature verifies with the environment's platform keys, its timestamp is in
 * the window, and its nonce was not seen before.
 */
export async function inquire(deps: InquiryDeps, subject: InquirySubject): Promise<InquiryResult> {
  const { environment } = deps;
  const inquiryPath = inquiryPathOf(subject.eventType);
  if (!inquiryPath) return { kind: 'failed', detail: `${subject.eventType} has no inquiry endpoint` };
  const base = new URL(environment.baseUrl);
  const path = `${base.pathname.replace(/\/+$/, '')}${inquiryPath}`;
  const body = Buffer.from(await deps.functions.request(subject), 'utf8');
  const headers = signPlatformRequest({
    privateKey: environment.privateKey,
    path,
    body,
    appId: environment.appId,
    headerPrefix: deps.headerPrefix,
    ...(environment.merchantId !== undefined && sendsMerchantId(subject.eventType)
      ? { merchantId: environment.merchantId }
      : {}),
  });
  let res: Response;
  let answer: Buffer;
  try {
    res = await fetch(new URL(path, base.origin), {
      method: 'POST',
      headers,
      body,
      redirect: 'error',
      signal: AbortSignal.timeout(environment.timeoutMs),
    });
    answer = Buffer.from(await res.arrayBuffer());
  } catch (err) {
    return { kind: 'failed', detail: `no answer: ${(err as Error).message}` };
  }
  if (answer.length > MAX_ANSWER_BYTES) return { kind: 'failed', detail: `answer over ${MAX_ANSWER_BYTES} bytes` };
  const checked = verifyPlatformResponse({
    method: 'POST',
    path,
    headers: Object.fromEntries(res.headers),
    body: answer,
    keys: environment.platformKeys,
    nowMs: deps.clock(),
    toleranceMs: deps.toleranceMs,
    headerPrefix: deps.headerPrefix,
  });
  if (!checked.ok) return { kind: 'refused', reason: checked.reason, status: res.status, detail: checked.detail };
  if (!(await deps.claimNonce(checked.nonce))) {
    return { kind: 'refused', reason: 'replayed', status: res.status, detail: "the answer's nonce was seen before" };
  }
  return {
    kind: 'answered',
    status: res.status,
    body: answer.toString('utf8'),
    nonce: checked.nonce,
    path,
    signatureHeaders: checked.signatureHeaders,
  };
}
