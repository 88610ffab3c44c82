import type { RejectionClass } from '../signature/result';

export const SUCCESS = { ret_code: '000000', ret_msg: 'Success' } as const;

/** Our own result codes for refusals; the platform's catalogue defines none besides success. */
export const RET_CODES = {
  header: '401001',
  timestamp: '401002',
  signature: '401003',
  forbidden: '403000',
  notFound: '404000',
  methodNotAllowed: '405000',
  requestTimeout: '408000',
  payloadTooLarge: '413000',
  expectationFailed: '417000',
  headersTooLarge: '431000',
  badRequest: '400000',
  unavailable: '503000',
  internal: '500000',
} as const satisfies Record<RejectionClass | string, string>;

export function envelope(retCode: string, retMsg: string): { ret_code: string; ret_msg: string } {
  return { ret_code: retCode, ret_msg: retMsg };
}
