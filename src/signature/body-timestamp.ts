const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;
const KEY = Buffer.from('timestamp');
/** 16 digits hold every safe integer; a longer run cannot be one. */
const MAX_DIGITS = 16;

export type BodyTimestamp = { found: true; timestamp: number } | { found: false; problem: string };

function isWhitespace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

/**
 * Finds the integer of the body's top-level `"timestamp"` member without parsing the body: one
 * linear pass that tracks strings, escapes and nesting depth, allocating nothing per byte. The legacy
 * scheme needs this number before it can build the string to verify, and an unauthenticated body
 * must not cost a JSON.parse (about 50 ms per hostile MiB, measured).
 *
 * Only a key written without escapes counts, and a second top-level `timestamp` makes the body
 * ambiguous (JSON.parse would take the last one): refused. Nothing here validates the JSON; the
 * signature proves the body, and the receive path confirms this number against the parsed body.
 */
export function findBodyTimestamp(body: Buffer): BodyTimestamp {
  const n = body.length;
  let i = 0;
  while (i < n && isWhitespace(body[i]!)) i++;
  if (i === n || body[i] !== OPEN_BRACE) return { found: false, problem: 'body is not a JSON object' };

  let depth = 0;
  let expectKey = false;
  let timestamp: number | undefined;
  while (i < n) {
    const c = body[i]!;
    if (c === QUOTE) {
      const start = i + 1;
      let escaped = false;
      i = start;
      while (i < n && body[i] !== QUOTE) {
        if (body[i] === BACKSLASH) {
          escaped = true;
          i++;
        }
        i++;
      }
      if (i >= n) return { found: false, problem: 'body has an unterminated string' };
      const end = i;
      i++;
      if (depth !== 1 || !expectKey) continue;
      expectKey = false;
      if (escaped || end - start !== KEY.length || body.compare(KEY, 0, KEY.length, start, end) !== 0) continue;
      if (timestamp !== undefined) return { found: false, problem: 'body timestamp appears more than once' };
      const value = readInteger(body, i);
      if (value === undefined)
        return { found: false, problem: 'body timestamp is not a non-negative integer (milliseconds)' };
      timestamp = value.value;
      i = value.next;
      continue;
    }
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      depth++;
      expectKey = depth === 1;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
      if (depth === 0) break;
    } else if (c === COMMA && depth === 1) {
      expectKey = true;
    }
    i++;
  }
  return timestamp === undefined
    ? { found: false, problem: 'body timestamp (integer milliseconds) is missing' }
    : { found: true, timestamp };
}

/** Reads `: <digits>` after a key; the digits must end the value (no fraction, exponent or sign). */
function readInteger(body: Buffer, from: number): { value: number; next: number } | undefined {
  const n = body.length;
  let i = from;
  while (i < n && isWhitespace(body[i]!)) i++;
  if (body[i] !== COLON) return undefined;
  i++;
  while (i < n && isWhitespace(body[i]!)) i++;
  if (body[i] === MINUS) return undefined;
  const start = i;
  let value = 0;
  while (i < n && body[i]! >= ZERO && body[i]! <= NINE) {
    value = value * 10 + (body[i]! - ZERO);
    i++;
  }
  const digits = i - start;
  if (digits === 0 || digits > MAX_DIGITS || (digits > 1 && body[start] === ZERO)) return undefined;
  while (i < n && isWhitespace(body[i]!)) i++;
  if (i < n && body[i] !== COMMA && body[i] !== CLOSE_BRACE) return undefined;
  return Number.isSafeInteger(value) ? { value, next: i } : undefined;
}
