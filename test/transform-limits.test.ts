import {
  DEFAULT_TRANSFORM_MAX_BYTES,
  START_MARGIN_MS,
  startSandbox,
  WATCHDOG_MARGIN_MS,
  type Sandbox,
} from '../src/transform/sandbox';

// A transform's clock holds everywhere its code can run (the call, reading what it threw or returned,
// its top level, the sandbox's warm-up), its output is capped and checked to be JSON, and a replaced
// global cannot reach the sandbox's own work.
jest.setTimeout(120000);

const LIMIT = 50;
const event = {
  id: 'evt_1',
  type: 'payment.result',
  timestamp: new Date(0).toISOString(),
  environment: null,
  merchantId: null,
};
const RAW = '{"type":"MERCH","data":{"request_id":"REQ-1","amount":980.50,"status":"SUCCESS"}}';

const open: Sandbox[] = [];
function sandbox(source: string, maxBytes = DEFAULT_TRANSFORM_MAX_BYTES): Sandbox {
  const s = startSandbox({ source, file: 'inline:t' }, { timeoutMs: LIMIT, maxBytes });
  open.push(s);
  return s;
}
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

/** The call's outcome: the body, or the error's message. */
async function outcome(s: Sandbox, raw = RAW): Promise<string | null> {
  return s.run({ event, raw }).catch((err: Error) => `error: ${err.message}`);
}

async function timed<T>(work: Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work;
  return { value, ms: performance.now() - started };
}

/** A call stuck in one built-in for seconds (QuickJS's interrupt is not asked meanwhile). */
const STUCK = "'a'.repeat(2e6).indexOf('a'.repeat(2000) + 'b')";

describe('the clock', () => {
  it("cuts the first call of an idle thread stuck inside one built-in within the limit and the watchdog's margin (and once more on a fresh thread)", async () => {
    const s = sandbox(`function transform(event) { return { found: ${STUCK} }; }`);
    expect(await s.compiled()).toBeUndefined();
    const { value, ms } = await timed(outcome(s));
    expect(value).toBe('error: timed out after 50 ms (inline:t)');
    // Two tries, each cut within the limit and the margin; the second on a thread that starts first.
    expect(ms).toBeLessThan(2 * (LIMIT + WATCHDOG_MARGIN_MS) + START_MARGIN_MS);
  });

  it('reads a thrown value under the clock: a getter that loops is a timeout, and the next call of that transform is answered', async () => {
    const s = sandbox(
      'function transform(event) {\n  if (event.id === "evt_1") throw { get message() { for (;;) {} } };\n  return { id: event.id };\n}',
    );
    const { value, ms } = await timed(outcome(s));
    expect(value).toBe('error: timed out after 50 ms (inline:t)');
    expect(ms).toBeLessThan(5000);
    await expect(s.run({ event: { ...event, id: 'evt_2' }, raw: RAW })).resolves.toBe('{"id":"evt_2"}');
  });

  it('limits the top level: a thrown value whose getter loops is refused as a timeout within 5 s', async () => {
    const s = sandbox('throw { get message() { for (;;) {} } };\nfunction transform(event) { return event; }');
    const { value, ms } = await timed(s.compiled());
    expect(value).toEqual({ kind: 'timeout', message: 'timed out after 50 ms' });
    expect(ms).toBeLessThan(5000);
    await expect(outcome(s)).resolves.toBe('error: timed out after 50 ms (inline:t)');
  });

  it('keeps the sandbox to the intrinsics it captured: a top level that replaces JSON.parse and JSON.stringify runs harmlessly', async () => {
    const s = sandbox(
      [
        'JSON.parse = function () { for (;;) {} };',
        "JSON.stringify = () => 'this is <not> JSON';",
        'String.prototype.slice = function () { for (;;) {} };',
        'Function.prototype.call = function () { for (;;) {} };',
        'Array.prototype[Symbol.iterator] = function () { for (;;) {} };',
        'function transform(event) { return { id: event.id, amount: event.data.data.amount }; }',
      ].join('\n'),
    );
    expect(await timed(s.compiled()).then((r) => r.ms)).toBeLessThan(5000);
    await expect(outcome(s)).resolves.toBe('{"id":"evt_1","amount":980.50}');
  });

  it('a timeout is final after one retry: an endless loop fails once, not in a storm', async () => {
    const s = sandbox('function transform(event) { for (;;) {} }');
    await expect(outcome(s)).resolves.toBe('error: timed out after 50 ms (inline:t)');
  });
});

describe('what a transform returns', () => {
  it.each([
    ['an async function (a Promise)', 'async function transform(event) { return { ok: 1 }; }', /thenable/],
    ['a thenable', 'function transform(event) { return { then() {} }; }', /thenable/],
    ['a function member', 'function transform(event) { return { f() {} }; }', /"f" is a function/],
    ['a symbol member', 'function transform(event) { return { s: Symbol("x") }; }', /"s" is a symbol/],
    ['a Map', 'function transform(event) { return { m: new Map([[1, 2]]) }; }', /"m" is a Map/],
    ['a Set', 'function transform(event) { return new Set([1]); }', /the result is a Set/],
    [
      'a LosslessNumber whose text is not a number',
      'function transform(event) { const n = event.data.data.amount; n.value = "--..eE"; return { n }; }',
      /a LosslessNumber holds text that is not a number/,
    ],
    [
      'the sandbox token forged into a string',
      'function transform(event) { const t = new LosslessNumber("1").toJSON(); return { s: t.slice(0, -1) + "1,2" }; }',
      /not JSON/,
    ],
  ])('%s fails as a transform error, and nothing is sent', async (_name, source, error) => {
    const got = await outcome(sandbox(source));
    expect(got).toMatch(/^error: /);
    expect(got).toMatch(error);
  });

  it('is capped at transformMaxBytes: 15 MB fails without leaving the sandbox; the cap itself passes', async () => {
    await expect(outcome(sandbox('function transform(event) { return "x".repeat(15e6); }'))).resolves.toBe(
      'error: TypeError: the result is larger than 1048576 bytes (inline:t)',
    );
    const capped = sandbox('function transform(event) { return { s: "é".repeat(500) }; }', 1000);
    await expect(outcome(capped)).resolves.toMatch(/larger than 1000 bytes/);
    const fits = sandbox('function transform(event) { return "x".repeat(998); }', 1000);
    await expect(outcome(fits)).resolves.toBe(JSON.stringify('x'.repeat(998)));
  });
});
