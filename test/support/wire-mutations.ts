import fc from 'fast-check';
import type { Genuine, Wire } from './fuzz-requests';

/**
 * Mutations of a genuine request's signed content, as plain data so a counterexample prints
 * readably. Each one changes something the signature covers (or a header the scheme fixes), or
 * writes the signature in a non-canonical way: none may verify.
 */
export type Mutation =
  | { kind: 'body-flip'; at: number; mask: number }
  | { kind: 'body-last-byte'; mask: number }
  | { kind: 'body-insert'; at: number; byte: number }
  | { kind: 'body-delete'; at: number }
  | { kind: 'body-truncate'; keep: number }
  | { kind: 'body-append-lf' }
  | { kind: 'target-char'; at: number; char: string }
  | { kind: 'target-case'; at: number }
  | { kind: 'target-query'; query: string }
  | { kind: 'target-drop-query' }
  | { kind: 'target-percent-encode'; at: number }
  | { kind: 'target-truncate'; keep: number }
  | { kind: 'method'; method: string }
  | { kind: 'header-char'; header: SignedHeader; at: number; char: string }
  | { kind: 'header-case'; header: SignedHeader; at: number }
  | { kind: 'header-truncate'; header: SignedHeader; keep: number }
  | { kind: 'header-repeat'; header: SignedHeader; other: boolean }
  | { kind: 'header-remove'; header: SignedHeader }
  | { kind: 'timestamp-shift'; by: number }
  | { kind: 'timestamp-leading-zero' }
  | { kind: 'signature-bit'; at: number; bit: number }
  | { kind: 'signature-bytes-truncate'; keep: number }
  | { kind: 'signature-base64-case'; at: number }
  | { kind: 'signature-non-canonical'; how: NonCanonical; at: number }
  | { kind: 'fixed-header'; header: 'x-svc-sign-alg' | 'x-svc-appid' | 'type' | 'version'; value: string }
  | { kind: 'foreign-key' }
  | { kind: 'legacy-body-timestamp'; by: number }
  | { kind: 'legacy-duplicate-timestamp' };

/** The headers each scheme signs or fixes, by role. */
export type SignedHeader = 'timestamp' | 'nonce' | 'sign';
type NonCanonical =
  | 'drop-padding'
  | 'drop-one-pad'
  | 'extra-padding'
  | 'url-safe'
  | 'pad-bits'
  | 'double-encoded'
  | 'whitespace'
  | 'broken-escape'
  | 'trailing-garbage';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const PRINTABLE = fc.constantFrom(...'abcXYZ019-_.~%/?&=+ '.split(''));

const at = fc.nat({ max: 1 << 20 });
const header = fc.constantFrom<SignedHeader>('timestamp', 'nonce', 'sign');
const common: fc.Arbitrary<Mutation>[] = [
  fc.record({ kind: fc.constant('body-flip' as const), at, mask: fc.integer({ min: 1, max: 255 }) }),
  fc.record({ kind: fc.constant('body-last-byte' as const), mask: fc.integer({ min: 1, max: 255 }) }),
  fc.record({ kind: fc.constant('body-insert' as const), at, byte: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant('body-delete' as const), at }),
  fc.record({ kind: fc.constant('body-truncate' as const), keep: at }),
  fc.constant({ kind: 'body-append-lf' as const }),
  fc.record({ kind: fc.constant('header-repeat' as const), header, other: fc.boolean() }),
  fc.record({ kind: fc.constant('header-remove' as const), header }),
  fc.record({ kind: fc.constant('signature-bit' as const), at, bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant('signature-bytes-truncate' as const), keep: at }),
  fc.record({ kind: fc.constant('signature-base64-case' as const), at }),
  fc.record({
    kind: fc.constant('signature-non-canonical' as const),
    how: fc.constantFrom<NonCanonical>(
      'drop-padding',
      'drop-one-pad',
      'extra-padding',
      'url-safe',
      'pad-bits',
      'double-encoded',
      'whitespace',
      'broken-escape',
      'trailing-garbage',
    ),
    at,
  }),
  fc.constant({ kind: 'foreign-key' as const }),
];

export const currentMutation: fc.Arbitrary<Mutation> = fc.oneof(
  ...common,
  fc.record({ kind: fc.constant('target-char' as const), at, char: PRINTABLE }),
  fc.record({ kind: fc.constant('target-case' as const), at }),
  fc.record({ kind: fc.constant('target-query' as const), query: fc.stringMatching(/^[a-z]{1,4}=[a-z0-9]{0,4}$/) }),
  fc.constant({ kind: 'target-drop-query' as const }),
  fc.record({ kind: fc.constant('target-percent-encode' as const), at }),
  fc.record({ kind: fc.constant('target-truncate' as const), keep: at }),
  fc.record({ kind: fc.constant('method' as const), method: fc.constantFrom('post', 'PUT', 'GET', 'PATCH', 'POST ') }),
  fc.record({
    kind: fc.constant('header-char' as const),
    header: fc.constantFrom<SignedHeader>('timestamp', 'nonce'),
    at,
    char: fc.constantFrom(...'0123456789abcXYZ-_'.split('')),
  }),
  fc.record({ kind: fc.constant('header-case' as const), header: fc.constant<SignedHeader>('nonce'), at }),
  fc.record({
    kind: fc.constant('header-truncate' as const),
    header: fc.constantFrom<SignedHeader>('timestamp', 'nonce'),
    keep: at,
  }),
  fc.record({
    kind: fc.constant('timestamp-shift' as const),
    by: fc.integer({ min: -2 * 300_000, max: 2 * 300_000 }).filter((n) => n !== 0),
  }),
  fc.constant({ kind: 'timestamp-leading-zero' as const }),
  fc.record({
    kind: fc.constant('fixed-header' as const),
    header: fc.constantFrom<'x-svc-sign-alg' | 'x-svc-appid'>('x-svc-sign-alg', 'x-svc-appid'),
    value: fc.constantFrom(
      'SHA1_WITH_RSA',
      'sha256_with_rsa',
      'other-app',
      'PLATFORM-APP',
      'platform-app, platform-app',
      '',
    ),
  }),
);

export const legacyMutation: fc.Arbitrary<Mutation> = fc.oneof(
  ...common,
  fc.record({
    kind: fc.constant('legacy-body-timestamp' as const),
    by: fc.integer({ min: -600_000, max: 600_000 }).filter((n) => n !== 0),
  }),
  fc.constant({ kind: 'legacy-duplicate-timestamp' as const }),
  fc.record({
    kind: fc.constant('fixed-header' as const),
    header: fc.constantFrom<'type' | 'version'>('type', 'version'),
    value: fc.constantFrom('rsa256', 'RSA', 'v1.1', 'V1.2', 'RSA256, RSA256', ''),
  }),
);

function headerName(g: Genuine, h: SignedHeader): string {
  if (g.scheme === 'legacy') return 'signature'; // v1.2 has one header of its own: the signature
  return `x-svc-${h}`;
}

function withHeader(w: Wire, name: string, value: string | undefined): Wire {
  const headers = { ...w.headers };
  if (value === undefined) delete headers[name];
  else headers[name] = value;
  return { ...w, headers };
}

function replaceAt(s: string, i: number, c: string): string {
  return s.slice(0, i) + c + s.slice(i + 1);
}

function flipCase(c: string): string {
  return c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase();
}

/** Index of the n-th (mod count) position whose character has case; undefined when none has. */
function letterAt(s: string, n: number): number | undefined {
  const letters = [...s].map((c, i) => (c.toLowerCase() !== c.toUpperCase() ? i : -1)).filter((i) => i >= 0);
  return letters.length ? letters[n % letters.length] : undefined;
}

function nonCanonical(b64: string, how: NonCanonical, n: number): string {
  switch (how) {
    case 'drop-padding':
      return b64.replace(/=+$/, '');
    case 'drop-one-pad':
      return b64.slice(0, -1);
    case 'extra-padding':
      return `${b64}==`;
    case 'url-safe':
      return /[+/]/.test(b64) ? b64.replace(/\+/g, '-').replace(/\//g, '_') : `${b64.slice(0, -2)}-_`;
    case 'pad-bits': {
      const i = b64.length - 3; // 256-byte signatures end "x==": 4 pad bits in x
      return replaceAt(b64, i, ALPHABET.charAt(ALPHABET.indexOf(b64.charAt(i)) | (1 + (n % 15))));
    }
    case 'double-encoded':
      return encodeURIComponent(encodeURIComponent(b64));
    case 'whitespace':
      return `${b64.slice(0, n % b64.length)}${[' ', '\t', '\n', '\r\n'][n % 4]}${b64.slice(n % b64.length)}`;
    case 'broken-escape':
      return `${b64.slice(0, n % b64.length)}%${'zG'[n % 2]}1${b64.slice(n % b64.length)}`;
    case 'trailing-garbage':
      return `${b64}${['A', 'AA', 'AAAA', '=', '.'][n % 5]}`;
  }
}

/** Applies a mutation; the result differs from the genuine request in what the scheme signs or fixes. */
export function mutate(g: Genuine, m: Mutation): Wire {
  const w = g.wire;
  const body = w.body;
  const sigName = headerName(g, 'sign');
  switch (m.kind) {
    case 'body-flip': {
      if (body.length === 0) return { ...w, body: Buffer.from([m.mask]) };
      const copy = Buffer.from(body);
      copy[m.at % copy.length]! ^= m.mask;
      return { ...w, body: copy };
    }
    case 'body-last-byte': {
      if (body.length === 0) return { ...w, body: Buffer.from([m.mask]) };
      const copy = Buffer.from(body);
      copy[copy.length - 1]! ^= m.mask;
      return { ...w, body: copy };
    }
    case 'body-insert': {
      const i = m.at % (body.length + 1);
      return { ...w, body: Buffer.concat([body.subarray(0, i), Buffer.from([m.byte]), body.subarray(i)]) };
    }
    case 'body-delete': {
      if (body.length === 0) return { ...w, body: Buffer.from(' ') };
      const i = m.at % body.length;
      return { ...w, body: Buffer.concat([body.subarray(0, i), body.subarray(i + 1)]) };
    }
    case 'body-truncate':
      return body.length === 0
        ? { ...w, body: Buffer.from('{}') }
        : { ...w, body: body.subarray(0, m.keep % body.length) };
    case 'body-append-lf':
      return { ...w, body: Buffer.concat([body, Buffer.from('\n')]) };
    case 'target-char': {
      const i = 1 + (m.at % (w.target.length - 1));
      const c = w.target[i] === m.char ? (m.char === 'a' ? 'b' : 'a') : m.char;
      return { ...w, target: replaceAt(w.target, i, c) };
    }
    case 'target-case': {
      const i = letterAt(w.target, m.at);
      return { ...w, target: i === undefined ? `${w.target}x` : replaceAt(w.target, i, flipCase(w.target[i]!)) };
    }
    case 'target-query':
      return { ...w, target: `${w.target}${w.target.includes('?') ? '&' : '?'}${m.query}` };
    case 'target-drop-query':
      return { ...w, target: w.target.includes('?') ? w.target.slice(0, w.target.indexOf('?')) : `${w.target}?` };
    case 'target-percent-encode': {
      // "/a" and "/%61" name the same resource to a URL parser, but the signature covers the text.
      const i = 1 + (m.at % (w.target.length - 1));
      return {
        ...w,
        target:
          w.target.slice(0, i) +
          `%${w.target.charCodeAt(i).toString(16).toUpperCase().padStart(2, '0')}` +
          w.target.slice(i + 1),
      };
    }
    case 'target-truncate':
      return { ...w, target: w.target.slice(0, m.keep % w.target.length) };
    case 'method':
      return { ...w, method: m.method };
    case 'header-char': {
      const name = headerName(g, m.header);
      const v = w.headers[name]!;
      const i = m.at % v.length;
      return withHeader(w, name, replaceAt(v, i, v[i] === m.char ? (m.char === '0' ? '1' : '0') : m.char));
    }
    case 'header-case': {
      const name = headerName(g, m.header);
      const v = w.headers[name]!;
      const i = letterAt(v, m.at);
      return withHeader(w, name, i === undefined ? `${v}x` : replaceAt(v, i, flipCase(v[i]!)));
    }
    case 'header-truncate': {
      const name = headerName(g, m.header);
      const v = w.headers[name]!;
      return withHeader(w, name, v.slice(0, m.keep % v.length));
    }
    case 'header-repeat': {
      // Node joins a repeated header's values with ", " before any handler sees them.
      const name = headerName(g, m.header);
      const v = w.headers[name]!;
      return withHeader(w, name, `${v}, ${m.other ? `${v.slice(0, -1)}x` : v}`);
    }
    case 'header-remove':
      return withHeader(w, headerName(g, m.header), undefined);
    case 'timestamp-shift':
      return g.scheme === 'current'
        ? withHeader(w, 'x-svc-timestamp', String(g.timestamp + m.by))
        : mutate(g, { kind: 'legacy-body-timestamp', by: m.by });
    case 'timestamp-leading-zero':
      return withHeader(w, 'x-svc-timestamp', `0${w.headers['x-svc-timestamp']}`);
    case 'signature-bit': {
      const bytes = Buffer.from(g.signature, 'base64');
      bytes[m.at % bytes.length]! ^= 1 << m.bit;
      return withHeader(w, sigName, encodeURIComponent(bytes.toString('base64')));
    }
    case 'signature-bytes-truncate': {
      const bytes = Buffer.from(g.signature, 'base64');
      return withHeader(
        w,
        sigName,
        encodeURIComponent(bytes.subarray(0, 1 + (m.keep % (bytes.length - 1))).toString('base64')),
      );
    }
    case 'signature-base64-case': {
      const i = letterAt(g.signature.replace(/=+$/, ''), m.at)!;
      return withHeader(w, sigName, encodeURIComponent(replaceAt(g.signature, i, flipCase(g.signature[i]!))));
    }
    case 'signature-non-canonical':
      return withHeader(w, sigName, nonCanonical(g.signature, m.how, m.at));
    case 'fixed-header':
      return withHeader(w, m.header, m.value);
    case 'foreign-key':
      return g.foreign;
    case 'legacy-body-timestamp': {
      // The generator writes the top-level member as "timestamp":<ws><value>; decoys carry other values.
      const text = body
        .toString('latin1')
        .replace(
          new RegExp(`"timestamp":(\\s*)${g.timestamp}`),
          (_m, ws: string) => `"timestamp":${ws}${g.timestamp + m.by}`,
        );
      return { ...w, body: Buffer.from(text, 'latin1') };
    }
    case 'legacy-duplicate-timestamp': {
      const brace = body.indexOf('{');
      return {
        ...w,
        body: Buffer.concat([
          body.subarray(0, brace + 1),
          Buffer.from(`"timestamp":${g.timestamp},`),
          body.subarray(brace + 1),
        ]),
      };
    }
  }
}
