import type { ErrorClass } from '../model/jobs';

export interface FailureFacts {
  errorClass: ErrorClass;
  status?: number;
  latencyMs: number;
  /** The first bytes of the target's answer. */
  responseExcerpt?: string;
}

const TIMEOUT_CODES = new Set([
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'ETIMEDOUT',
]);
const RESET_CODES = new Set(['ECONNRESET', 'UND_ERR_SOCKET', 'EPIPE', 'UND_ERR_CLOSED']);
const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN']);

/** Classifies a network-level error from undici or node by its code. */
export function classifyNetworkError(code: string | undefined): ErrorClass {
  if (code === undefined) return 'network';
  if (TIMEOUT_CODES.has(code)) return 'timeout';
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (RESET_CODES.has(code)) return 'connection_reset';
  if (DNS_CODES.has(code)) return 'dns';
  if (/CERT|TLS|SSL|EPROTO|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code)) return 'tls';
  return 'network';
}

/** One line that says what happened, for failedReason, the dashboard and the log. */
export function summarise(facts: FailureFacts, detail: string, timeoutMs: number): string {
  const excerpt = facts.responseExcerpt?.replace(/\s+/g, ' ').trim().slice(0, 120);
  switch (facts.errorClass) {
    case 'http_status':
      return `HTTP ${facts.status} after ${facts.latencyMs} ms${excerpt ? `: ${excerpt}` : ''}`;
    case 'timeout':
      return `timeout after ${timeoutMs} ms`;
    default:
      return `${facts.errorClass.replace('_', ' ')} (${detail}) after ${facts.latencyMs} ms`;
  }
}
