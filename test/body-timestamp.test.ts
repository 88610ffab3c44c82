import { findBodyTimestamp } from '../src/signature/body-timestamp';

describe('finding the legacy body timestamp without parsing the body', () => {
  it.each([
    ['the first member', '{"timestamp":1795000000000,"a":1}', 1795000000000],
    ['the last member', '{"a":1,"timestamp":42}', 42],
    ['whitespace everywhere', ' \r\n{ "a" : 1 ,\t"timestamp" :\n 7 \r\n}', 7],
    ['a nested timestamp before it', '{"data":{"timestamp":5},"timestamp":7}', 7],
    ['a nested array of objects before it', '{"a":[{"timestamp":1},[{"timestamp":2}]],"timestamp":3}', 3],
    ['"timestamp" as a string value', '{"a":"timestamp","timestamp":3}', 3],
    ['an escaped quote and "timestamp" inside a string', '{"a":"x\\"timestamp\\":9","timestamp":4}', 4],
    ['a string ending in an escaped backslash', '{"a":"x\\\\","timestamp":5}', 5],
    ['braces and brackets inside strings', '{"a":"}}]]{[","timestamp":6}', 6],
    ['zero', '{"timestamp":0}', 0],
    ['the largest safe integer', `{"timestamp":${Number.MAX_SAFE_INTEGER}}`, Number.MAX_SAFE_INTEGER],
    ['a body with nothing after the number', '{"timestamp":8', 8],
  ])('with %s, then it finds it', (_case, body, timestamp) => {
    expect(findBodyTimestamp(Buffer.from(body))).toEqual({ found: true, timestamp });
  });

  const missing = 'body timestamp (integer milliseconds) is missing';
  const notInteger = 'body timestamp is not a non-negative integer (milliseconds)';
  it.each([
    ['no timestamp', '{"a":1}', missing],
    ['only a nested one', '{"data":{"timestamp":1}}', missing],
    ['only an escaped key', '{"time\\u0073tamp":1}', missing],
    ['a key that merely starts with timestamp', '{"timestamps":1}', missing],
    ['the members after the top-level object closes', '{"a":1}{"timestamp":1}', missing],
    ['two top-level timestamps', '{"timestamp":1,"timestamp":2}', 'body timestamp appears more than once'],
    ['a string value', '{"timestamp":"1"}', notInteger],
    ['a fraction', '{"timestamp":1.5}', notInteger],
    ['a fraction of zero', '{"timestamp":1795000000000.0}', notInteger],
    ['an exponent', '{"timestamp":1e3}', notInteger],
    ['a negative number', '{"timestamp":-1}', notInteger],
    ['a leading zero', '{"timestamp":01}', notInteger],
    ['beyond the safe integers', '{"timestamp":9007199254740993}', notInteger],
    ['17 digits', '{"timestamp":10000000000000000}', notInteger],
    ['null', '{"timestamp":null}', notInteger],
    ['no colon', '{"timestamp" 1}', notInteger],
    ['an array', '[{"timestamp":1}]', 'body is not a JSON object'],
    ['an empty body', '', 'body is not a JSON object'],
    ['a byte-order mark', '\ufeff{"timestamp":1}', 'body is not a JSON object'],
    ['an unterminated string', '{"a":"xx', 'body has an unterminated string'],
    ['a trailing backslash', '{"a":"x\\', 'body has an unterminated string'],
  ])('with %s, then it is not found', (_case, body, problem) => {
    expect(findBodyTimestamp(Buffer.from(body))).toEqual({ found: false, problem });
  });

  it('agrees with JSON.parse on the top-level timestamp of ordinary bodies', () => {
    const bodies = [
      {
        timestamp: 1795000000000,
        type: 'MERCH',
        data: { timestamp: 1, list: [{ timestamp: 2 }], note: '"timestamp":3' },
      },
      { data: { a: [[], {}, '', '\\'] }, timestamp: 12 },
    ];
    for (const value of bodies) {
      for (const text of [JSON.stringify(value), JSON.stringify(value, null, 2)]) {
        expect(findBodyTimestamp(Buffer.from(text))).toEqual({
          found: true,
          timestamp: (JSON.parse(text) as { timestamp: number }).timestamp,
        });
      }
    }
  });
});
