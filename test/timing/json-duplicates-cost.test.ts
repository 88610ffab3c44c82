import { MAX_JSON_DEPTH, membersUnlessDeeperThan, nestsDeeperThan } from '../../src/receiving/json-depth';
import { duplicateKeyIn } from '../../src/receiving/json-duplicates';

// The duplicate-key check runs on every verified body: the depth pass counts members on the way, and the
// parsed value's keys are counted; what it adds must cost the same order as JSON.parse. Timed alone
// (test/timing), as wall-clock comparisons are.
function timePerCall(fn: () => unknown, calls: number): number {
  const started = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) fn();
  return Number(process.hrtime.bigint() - started) / calls;
}

/** What the check adds (its depth pass over the depth-only one) and the parse's time per call in ns, best of five. */
function measure(name: string, body: string, calls: number): { scan: number; parse: number } {
  const parsed: unknown = JSON.parse(body);
  const check = () => duplicateKeyIn(body, parsed, membersUnlessDeeperThan(body, MAX_JSON_DEPTH));
  const depthOnly = () => nestsDeeperThan(body, MAX_JSON_DEPTH);
  const best = (fn: () => unknown) => Math.min(...[1, 2, 3, 4, 5].map(() => timePerCall(fn, calls)));
  [check, depthOnly, () => JSON.parse(body)].forEach((fn) => timePerCall(fn, calls));
  const scan = Math.max(0, best(check) - best(depthOnly));
  const parse = best(() => JSON.parse(body));
  process.stdout.write(
    `${name} (${body.length} bytes): duplicate-key check adds ${scan.toFixed(0)} ns, JSON.parse ${parse.toFixed(0)} ns\n`,
  );
  return { scan, parse };
}

describe('the duplicate-key scan', () => {
  it('costs the same order as JSON.parse, on a typical notification and on a body at the size limit of many keys', () => {
    const typical = JSON.stringify({
      type: 'MERCH',
      data: {
        request_id: 'REQ-20260412-0001',
        status: 'SUCCESS',
        amount: '980.00',
        currency: 'USD',
        payee: { name: 'Example Trading Ltd', account: '6222020200112233445', bank: { swift: 'EXAMPLEXXX' } },
        items: Array.from({ length: 5 }, (_, i) => ({ id: i, amount: '10.00', memo: `line ${i}` })),
      },
    });
    const wide = JSON.stringify(Object.fromEntries(Array.from({ length: 20000 }, (_, i) => [`k${i}`, i]))).slice(
      0,
      262000,
    );
    const manyKeys = `${wide.slice(0, wide.lastIndexOf(','))}}`;
    for (const [name, body, calls] of [
      ['typical', typical, 20000],
      ['one object of many keys', manyKeys, 50],
    ] as const) {
      const { scan, parse } = measure(name, body, calls);
      expect(scan).toBeLessThan(parse * 3);
    }
  });
});
