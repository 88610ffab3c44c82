import { MAX_JSON_DEPTH } from '../src/receiving/json-depth';
import { DEFAULT_TRANSFORM_TIMEOUT_MS, transformLimitsOf } from '../src/transform/check';
import { startSandbox } from '../src/transform/sandbox';

// The time limit measures the transform's own code: reading a body at the size limit into the sandbox
// and writing the result out are the sandbox's work, not counted against it. The identity transform,
// at the default 50 ms, over 1,000 bodies of the maximum notification size: no timeout, every number
// written back with its text.
jest.setTimeout(900_000);

const BODY_LIMIT = 262_144; // the default BODY_LIMIT_BYTES
const PER_SHAPE = 200;

/** `{"type":"MERCH","data":{"<key>":[item, item, …]}}` with as many items as fit under the size limit. */
function filled(key: string, item: (i: number) => string): string {
  const head = `{"type":"MERCH","data":{"${key}":[`;
  const items: string[] = [];
  let size = head.length + 3;
  for (let i = 0; ; i++) {
    const next = item(i);
    if (size + next.length + 1 > BODY_LIMIT) break;
    items.push(next);
    size += next.length + 1;
  }
  return `${head}${items.join(',')}]}}`;
}

const nested = (depth: number, inner: string): string => '['.repeat(depth) + inner + ']'.repeat(depth);

const SHAPES: Record<string, (n: number) => string> = {
  'many integers': (n) => filled('list', (i) => String((i * 7919 + n) % 1_000_000_007)),
  'many decimals': (n) => filled('list', (i) => `${(i * 31 + n) % 100000}.${String(i % 100).padStart(2, '0')}`),
  'many small objects': (n) => filled('list', (i) => `{"id":${i},"status":"SUCCESS","amount":${n}.10,"ok":true}`),
  'one long string': (n) => `{"type":"MERCH","data":{"memo":"${String(n).padEnd(BODY_LIMIT - 40, 'x')}"}}`,
  // The body nests at most MAX_JSON_DEPTH levels: two for the envelope, the rest in each array.
  'deep arrays within the depth limit': (n) => filled('list', (i) => nested(MAX_JSON_DEPTH - 3, String(i + n))),
};

it.each(Object.entries(SHAPES))(
  '%s: the identity transform gives every body back, with no timeout',
  async (_shape, body) => {
    const limits = transformLimitsOf({});
    expect(limits.timeoutMs).toBe(DEFAULT_TRANSFORM_TIMEOUT_MS);
    const sandbox = startSandbox(
      { source: 'function transform(event) { return event; }', file: 'inline:identity' },
      limits,
    );
    const failures: string[] = [];
    try {
      expect(await sandbox.compiled()).toBeUndefined();
      for (let n = 0; n < PER_SHAPE; n++) {
        const raw = body(n);
        expect(raw.length).toBeLessThanOrEqual(BODY_LIMIT);
        const event = {
          id: `evt_${n}`,
          type: 'payment.result',
          timestamp: new Date(0).toISOString(),
          environment: null,
          merchantId: null,
        };
        const out = await sandbox.run({ event, raw }).catch((err: Error) => `error: ${err.message}`);
        const expected = `{"id":"evt_${n}","type":"payment.result","timestamp":"${event.timestamp}","environment":null,"merchantId":null,"data":${raw}}`;
        if (out !== expected) failures.push(`body ${n}: ${out?.slice(0, 200)}`);
      }
    } finally {
      await sandbox.close();
    }
    expect(failures).toEqual([]);
  },
);
