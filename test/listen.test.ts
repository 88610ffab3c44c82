import { Webhook } from 'standardwebhooks';
import { startListener } from '../src/listen/server';
import { CliProcess } from './support/cli-process';
import { TargetServer } from './support/target-server';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const EVENT_ID = 'evt_0123456789abcdef0123456789abcdef01234567';
const body = JSON.stringify({
  id: EVENT_ID,
  type: 'payment.result',
  timestamp: '2026-11-23T16:00:00.000Z',
  data: { type: 'MERCH', data: { request_id: 'PAY20261123000001', status: 'SUCCESS', amount: '980.00' } },
});

/** Headers as the service's forwarding would send them, signed with `secret`. */
function signed(payload: string, secret = SECRET): Record<string, string> {
  const now = new Date();
  return {
    'content-type': 'application/json',
    'webhook-id': EVENT_ID,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(EVENT_ID, now, payload),
  };
}

let handler: TargetServer;
const running: CliProcess[] = [];

beforeAll(async () => {
  handler = await TargetServer.start(() => ({ status: 202, body: 'handled by the local app' }));
});
afterAll(async () => {
  await Promise.all(running.map((c) => c.stop()));
  await handler.close();
});

// Started with ts-node, the CLI takes seconds to come up on a loaded machine.
const START_TIMEOUT_MS = 60000;

async function listen(...args: string[]): Promise<{ cli: CliProcess; url: string }> {
  const cli = CliProcess.start(['listen', '--port', '0', '--secret', SECRET, ...args]);
  running.push(cli);
  const ready = await cli.waitForLine((l) => l.startsWith('listening on '), START_TIMEOUT_MS);
  return { cli, url: /listening on (http:\/\/\S+)/.exec(ready)![1]! };
}

describe("listen, the merchant developer's local endpoint", () => {
  it(
    'verifies a signed event, prints one readable line, forwards it and prints the answer; a tampered one is 401 with the reason',
    async () => {
      const { cli, url } = await listen('--forward-to', handler.url);

      const good = await fetch(`${url}/any/path`, { method: 'POST', headers: signed(body), body });
      expect(good.status).toBe(202); // the local handler's answer is passed back
      expect(await good.text()).toBe('handled by the local app');
      const line = await cli.waitForLine((l) => l.includes(EVENT_ID) && !l.includes('rejected'));
      expect(line).toMatch(
        /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\s+payment\.result\s+evt_0123\S+\s+status=SUCCESS\s+request_id=PAY20261123000001$/,
      );
      expect(await cli.waitForLine((l) => l.includes('->'))).toMatch(
        /-> 202 from http:\/\/127\.0\.0\.1:\d+\/hook\/[0-9a-f]+ in \d+ ms: handled by the local app/,
      );
      expect(handler.requests).toHaveLength(1);
      expect(handler.requests[0]!.body.toString()).toBe(body);
      expect(handler.requests[0]!.headers['webhook-id']).toBe(EVENT_ID);

      const tampered = body.replace('980.00', '9800.00');
      const bad = await fetch(`${url}/hooks`, { method: 'POST', headers: signed(body), body: tampered });
      expect(bad.status).toBe(401);
      expect(await bad.json()).toEqual({ error: 'invalid_signature', message: 'No matching signature found' });
      expect(await cli.waitForLine((l) => l.includes('rejected'))).toMatch(
        /rejected 401 {2}POST \/hooks {2}webhook-id evt_0123\S+ {2}reason: No matching signature found$/,
      );

      const unsigned = await fetch(`${url}/hooks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      expect(unsigned.status).toBe(401);
      expect(await cli.waitForLine((l) => l.includes('missing header'))).toMatch(
        /reason: missing header webhook-id, webhook-timestamp, webhook-signature$/,
      );
      expect(handler.requests).toHaveLength(1); // neither was passed on
    },
    START_TIMEOUT_MS + 20000,
  );

  it('--json prints the raw event, and without --forward-to answers 200 itself', async () => {
    const lines: string[] = [];
    const listener = await startListener({ port: 0, host: '127.0.0.1', secrets: [SECRET], json: true }, (l) =>
      lines.push(l),
    );
    try {
      const url = `http://127.0.0.1:${listener.port}`;
      const res = await fetch(`${url}/`, { method: 'POST', headers: signed(body), body });
      expect(res.status).toBe(200);
      expect(lines).toEqual([body]);

      const other = await fetch(`${url}/`, {
        method: 'POST',
        headers: signed(body, 'whsec_c29tZSBvdGhlciBzZWNyZXQgbm90IGNvbmZpZ3VyZWQ='),
        body,
      });
      expect(other.status).toBe(401);
      expect(JSON.parse(lines[1]!)).toMatchObject({
        rejected: true,
        status: 401,
        reason: 'No matching signature found',
        webhookId: EVENT_ID,
      });
    } finally {
      await listener.close();
    }
  });

  it('accepts a request signed under either secret of a rotation', async () => {
    const OLD = 'whsec_c29tZSBvdGhlciBzZWNyZXQgbm90IGNvbmZpZ3VyZWQ=';
    const lines: string[] = [];
    const listener = await startListener({ port: 0, host: '127.0.0.1', secrets: [SECRET, OLD], json: false }, (l) =>
      lines.push(l),
    );
    try {
      const res = await fetch(`http://127.0.0.1:${listener.port}/`, {
        method: 'POST',
        headers: signed(body, OLD),
        body,
      });
      expect(res.status).toBe(200);
      expect(lines[0]).toMatch(/payment\.result\s+evt_0123\S+\s+status=SUCCESS/);
    } finally {
      await listener.close();
    }
  });
});
