import { buildForwarding, waitUntil, type ForwardingHarness } from './forwarding-harness';
import type { FakePlatform } from './platform';
import { TargetServer } from './target-server';

export const OPERATOR = { username: 'ops', password: 'correct horse battery' };
export const VIEWER = { username: 'auditor', password: 'read only please' };
export const REQUEST_ID = 'PAY20261121000001';

export interface ConsoleWorld {
  f: ForwardingHarness;
  /** Delivers (200). */
  ledger: TargetServer;
  /** Answers 500 with a short body until `erpUp`, so its delivery is a dead letter. */
  erp: TargetServer;
  setErpUp(up: boolean): void;
  eventId: string;
  close(): Promise<void>;
}

/**
 * A service with two targets, an operator (ADMIN_USER) and a viewer principal, and one payment.result
 * with REQUEST_ID: delivered to `ledger`, dead-lettered at `erp` after two failed attempts.
 */
export async function consoleWorld(platform: FakePlatform): Promise<ConsoleWorld> {
  let erpUp = false;
  const ledger = await TargetServer.start();
  const erp = await TargetServer.start(() =>
    erpUp ? { status: 200 } : { status: 500, body: '{"error":"ledger period closed"}' },
  );
  const f = buildForwarding(
    platform,
    [
      { name: 'ledger', url: ledger.url, events: ['payment.result'] },
      { name: 'erp', url: erp.url, events: ['payment.result'], maxAttempts: 2 },
    ],
    { ADMIN_USER: OPERATOR.username, ADMIN_PASSWORD: OPERATOR.password },
    (c) => ({ ...c, adminPrincipals: [{ name: VIEWER.username, password: VIEWER.password, role: 'viewer' }] }),
  );
  const body = JSON.stringify({
    type: 'MERCH',
    data: { request_id: REQUEST_ID, status: 'SUCCESS', amount: '12.50', payer_name: 'Jane Roe' },
  });
  await platform.send(f.receiver.app, platform.signed('payment.result', { body })).expect(200);
  await ledger.waitFor(() => ledger.successes().length === 1);
  const eventId = String(ledger.requests[0]!.headers['webhook-id']);
  await waitUntil(
    async () => (await f.pipeline.deliveryQueue('erp')!.getJobState(eventId)) === 'failed',
    10000,
    'erp dead-lettered',
  );
  await waitUntil(
    async () => (await f.pipeline.deliveryQueue('ledger')!.getJobState(eventId)) === 'completed',
    5000,
    'ledger completed',
  );
  return {
    f,
    ledger,
    erp,
    setErpUp: (up) => {
      erpUp = up;
    },
    eventId,
    async close() {
      await f.close();
      await ledger.close();
      await erp.close();
    },
  };
}
