import { connect, type Socket } from 'node:net';
import { ConfigError } from '../src/config/errors';
import { loadConfig } from '../src/config/load';
import { startLiveReceiver, type LiveReceiver } from './support/live-receiver';
import { counterValue } from './support/metric-value';
import { FakePlatform } from './support/platform';
import { exchange, rawRequest } from './support/raw-http';

const platform = new FakePlatform();
const BUDGET = 300_000;
let live: LiveReceiver;

beforeAll(async () => {
  live = await startLiveReceiver({
    PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
    UNVERIFIED_BODY_BUDGET_BYTES: String(BUDGET),
  });
});
afterAll(() => live.close());

/** Signed headers that pass the precheck, for a body of `length` bytes (its signature will not verify). */
function head(length: number | 'chunked'): Buffer {
  const n = platform.signed('payment.result');
  const framing: [string, string] =
    length === 'chunked' ? ['Transfer-Encoding', 'chunked'] : ['Content-Length', String(length)];
  return rawRequest('POST', n.target, [['Host', 'x'], ...Object.entries(n.headers), framing]);
}

/** A connection holding the budget: its headers and part of its declared body, the rest never sent. */
async function holder(length: number): Promise<Socket> {
  const socket = connect({ port: live.port, host: '127.0.0.1' });
  await new Promise((r) => socket.on('connect', r));
  socket.on('error', () => undefined);
  socket.write(Buffer.concat([head(length), Buffer.alloc(1000, 0x20)]));
  await new Promise((r) => setTimeout(r, 200));
  return socket;
}

describe('the budget for unverified bodies', () => {
  it('when a declared body does not fit what others hold, then it is refused before it is read: 503 with Retry-After and the envelope, connection closed, counted and logged; a small one still fits; once the holder is gone the budget is back', async () => {
    const a = await holder(200_000);

    const refused = await exchange(live.port, Buffer.concat([head(200_000), Buffer.alloc(200_000, 0x20)]));
    expect(
      refused.responses.map((r) => [
        r.status,
        r.headers['retry-after'],
        r.headers.connection,
        JSON.parse(r.body.toString()).ret_code,
      ]),
    ).toEqual([[503, '5', 'close', '503000']]);
    expect(refused.closedByServer).toBe(true);
    expect(await counterValue(live.metrics.portRefusals, { reason: 'body_budget' })).toBe(1);
    expect(live.logs.find((l) => l.reason === 'body_budget')).toMatchObject({
      level: 'warn',
      message: 'notification refused: the budget for unverified bodies is in use',
      status: 503,
      budgetBytes: BUDGET,
      declaredBytes: 200_000,
    });

    // A genuine notification of the usual size fits beside the holder.
    const n = platform.signed('payment.result');
    const genuine = await exchange(
      live.port,
      rawRequest(
        'POST',
        n.target,
        [
          ['Host', 'x'],
          ['Connection', 'close'],
          ...Object.entries(n.headers),
          ['Content-Length', String(n.body.length)],
        ],
        n.body,
      ),
    );
    expect(genuine.responses.map((r) => r.status)).toEqual([200]);

    a.destroy();
    await new Promise((r) => setTimeout(r, 200));
    // The same size now fits: read whole, then refused for its signature, not for the budget.
    const fits = await exchange(live.port, Buffer.concat([head(200_000), Buffer.alloc(200_000, 0x20)]), {
      settleMs: 200,
    });
    expect(fits.responses.map((r) => r.status)).toEqual([401]);
    expect(await counterValue(live.metrics.portRefusals, { reason: 'body_budget' })).toBe(1);
  });

  it('when a chunked body grows past what is left of the budget, then it is refused 503 as it grows', async () => {
    const a = await holder(200_000);
    try {
      const chunk = (size: number) =>
        Buffer.concat([Buffer.from(`${size.toString(16)}\r\n`), Buffer.alloc(size, 0x20), Buffer.from('\r\n')]);
      const refused = await exchange(live.port, Buffer.concat([head('chunked'), chunk(60_000), chunk(60_000)]), {
        pieces: [Buffer.concat([head('chunked'), chunk(60_000)]), chunk(60_000)],
        pieceDelayMs: 50,
      });
      expect(refused.responses.map((r) => [r.status, r.headers['retry-after']])).toEqual([[503, '5']]);
      expect(await counterValue(live.metrics.portRefusals, { reason: 'body_budget' })).toBe(2);
    } finally {
      a.destroy();
    }
  });

  it('when the budget is below the body limit, then the configuration is refused', () => {
    let problems: string[] = [];
    try {
      loadConfig({ PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64, UNVERIFIED_BODY_BUDGET_BYTES: '100000' });
    } catch (err) {
      if (err instanceof ConfigError) problems = err.problems;
    }
    expect(problems).toEqual([expect.stringMatching(/^UNVERIFIED_BODY_BUDGET_BYTES: must be at least bodyLimitBytes/)]);
  });
});
