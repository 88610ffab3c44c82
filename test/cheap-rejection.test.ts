import { startLiveReceiver, type LiveReceiver } from './support/live-receiver';
import { counterValue } from './support/metric-value';
import { FakePlatform } from './support/platform';
import { exchange, rawRequest } from './support/raw-http';

const platform = new FakePlatform();
const REQUEST_TIMEOUT_MS = 5000;
let live: LiveReceiver;

beforeAll(async () => {
  live = await startLiveReceiver({ PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64 }, (c) => ({
    ...c,
    http: { ...c.http, headersTimeoutMs: 2000, requestTimeoutMs: REQUEST_TIMEOUT_MS },
  }));
});
afterAll(() => live.close());

/** Only the head of a request that declares a 200 KB body: the body itself is never sent. */
function headOnly(change: (headers: Record<string, string>) => void): Buffer {
  const n = platform.signed('payment.result');
  const headers: Record<string, string> = { Host: 'x', ...n.headers, 'Content-Length': String(200_000) };
  change(headers);
  return rawRequest('POST', n.target, Object.entries(headers));
}

describe('cheap rejection: headers are judged before the body is read', () => {
  it.each([
    [
      'a timestamp outside the window',
      (h: Record<string, string>) => (h['x-svc-timestamp'] = String(Date.now() - 3_600_000)),
      '401002',
      'timestamp_outside_window',
    ],
    ['no nonce', (h: Record<string, string>) => delete h['x-svc-nonce'], '401001', 'missing_header'],
    [
      'a signature that is not canonical Base64',
      (h: Record<string, string>) => (h['x-svc-sign'] = 'not*base64'),
      '401003',
      'malformed_signature',
    ],
  ])(
    'when a notification has %s, then it is answered 401 without waiting for its body, and the connection is closed',
    async (_what, change, retCode, reason) => {
      const ex = await exchange(live.port, headOnly(change));

      expect(ex.responses.map((r) => [r.status, JSON.parse(r.body.toString()).ret_code])).toEqual([[401, retCode]]);
      expect(ex.responses[0]!.headers.connection).toBe('close');
      expect(ex.closedByServer).toBe(true);
      expect(ex.closedAfterMs).toBeLessThan(REQUEST_TIMEOUT_MS / 2); // answered, not timed out waiting for the body
      expect(live.logs.find((l) => l.message === 'notification rejected' && l.reason === reason)).toBeDefined();
      expect(
        await counterValue(live.metrics.notifications, { event_type: 'payment.result', outcome: 'rejected', reason }),
      ).toBeGreaterThanOrEqual(1);
    },
  );

  it('when the headers pass, then the body is read and verified, and a forged one is refused on its signature', async () => {
    const n = platform.signed('payment.result');
    const forged = Buffer.from(n.body.toString().replace('}', ',"amount":"999"}'));
    const ex = await exchange(
      live.port,
      rawRequest(
        'POST',
        n.target,
        [
          ['Host', 'x'],
          ['Connection', 'close'],
          ...Object.entries(n.headers),
          ['Content-Length', String(forged.length)],
        ],
        forged,
      ),
    );
    expect(ex.responses.map((r) => [r.status, JSON.parse(r.body.toString()).ret_code])).toEqual([[401, '401003']]);
  });
});
