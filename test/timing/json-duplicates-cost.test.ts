import { duplicateKeyIn } from '../../src/receiving/json-duplicates';

// The duplicate-key scan runs on every verified body, beside JSON.parse: it must cost the same order.
// Timed alone (test/timing), as wall-clock comparisons are.
function timePerCall(fn: () => unknown, calls: number): number {
  const started = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) fn();
  return Number(process.hrtime.bigint() - started) / calls;
}

/** The scan's and the parse's time per call in ns, the best of five rounds each, printed. */
function measure(name: string, body: string, calls: number): { scan: number; parse: number } {
  const parsed: unknown = JSON.parse(body);
  timePerCall(() => duplicateKeyIn(body, parsed), calls);
  timePerCall(() => JSON.parse(body), calls);
  const scan = Math.min(...[1, 2, 3, 4, 5].map(() => timePerCall(() => duplicateKeyIn(body, parsed), calls)));
  const parse = Math.min(...[1, 2, 3, 4, 5].map(() => timePerCall(() => JSON.parse(body), calls)));
  process.stdout.write(
    `${name} (${body.length} bytes): scan ${scan.toFixed(0)} ns, JSON.parse ${parse.toFixed(0)} ns\n`,
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
