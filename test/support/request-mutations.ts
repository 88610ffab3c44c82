import fc from 'fast-check';

/** A request in parts, so mutations can work on any of them. Headers are a list: names may repeat. */
export interface RequestParts {
  method: string;
  target: string;
  version: string;
  headers: [string, string][];
  body: Buffer;
}

/**
 * One mutated request. Every mutation is built so that the request must be refused: it changes a
 * signed part (method, target, signed headers, body), or breaks HTTP (syntax, framing, size), or
 * never completes. Changes that leave the signed parts equal (an unsigned header, header-name case,
 * an equivalent encoding) are only ever added as noise on top of such a change, never alone.
 */
export interface Mutant {
  kind: string;
  detail: string;
  bytes: Buffer;
  /** Number of writes the bytes are split into. */
  pieces: number;
  /** The method on the wire is HEAD, so its answer has no body. */
  head: boolean;
}

export interface MutationContext {
  base: RequestParts;
  /** Lower-case names of the headers the signature covers (present, with exactly these values). */
  signedHeaders: string[];
  /** Lower-case names of headers that are not signed but whose value is checked (e.g. the algorithm); optional. */
  checkedHeaders: string[];
  signHeader: string;
  bodyLimitBytes: number;
}

type Change = { kind: string; detail: string; apply: (p: RequestParts) => Buffer | RequestParts };

const PRINTABLE = Array.from({ length: 0x7e - 0x21 + 1 }, (_, i) => String.fromCharCode(0x21 + i));
const PATH_CHARS = [..."abcxyzABCXYZ0189/-._~%;:@!$&'()*+,=?#"];

export function serialize(p: RequestParts): Buffer {
  const head = `${p.method} ${p.target} ${p.version}\r\n${p.headers.map(([n, v]) => `${n}: ${v}\r\n`).join('')}\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), p.body]);
}

function clone(p: RequestParts): RequestParts {
  return { ...p, headers: p.headers.map(([n, v]) => [n, v] as [string, string]), body: Buffer.from(p.body) };
}

function withLength(p: RequestParts, body: Buffer): RequestParts {
  const q = clone(p);
  q.body = body;
  q.headers = q.headers.map(([n, v]) => [n, n.toLowerCase() === 'content-length' ? String(body.length) : v]);
  return q;
}

function setHeader(p: RequestParts, name: string, value: string | undefined, newName = name): RequestParts {
  const q = clone(p);
  const i = q.headers.findIndex(([n]) => n.toLowerCase() === name);
  if (i < 0) {
    if (value !== undefined) q.headers.push([newName, value]);
  } else if (value === undefined) q.headers.splice(i, 1);
  else q.headers[i] = [newName, value];
  return q;
}

function headerOf(p: RequestParts, name: string): string {
  return p.headers.find(([n]) => n.toLowerCase() === name)?.[1] ?? '';
}

function editString(s: string, op: 'replace' | 'insert' | 'delete', at: number, ch: string): string {
  const i = at % (s.length + (op === 'insert' ? 1 : 0) || 1);
  if (op === 'replace') return s.slice(0, i) + ch + s.slice(i + 1);
  if (op === 'insert') return s.slice(0, i) + ch + s.slice(i);
  return s.slice(0, i) + s.slice(i + 1);
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return `\u0000undecodable:${s}`;
  }
}

function chunked(body: Buffer, sizes: number[]): Buffer {
  const parts: Buffer[] = [];
  let offset = 0;
  for (const size of sizes) {
    if (offset >= body.length) break;
    const chunk = body.subarray(offset, offset + Math.max(1, size));
    parts.push(Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n'));
    offset += chunk.length;
  }
  if (offset < body.length)
    parts.push(Buffer.from(`${(body.length - offset).toString(16)}\r\n`), body.subarray(offset), Buffer.from('\r\n'));
  return Buffer.concat([...parts, Buffer.from('0\r\n\r\n')]);
}

function flipByte(body: Buffer, at: number, mask: number): Buffer {
  const b = Buffer.from(body);
  const i = at % b.length;
  b[i] = (b[i] as number) ^ mask;
  return b;
}

/** Changes that keep the signed parts as they are; only ever combined with a change that breaks them. */
function noiseArb(): fc.Arbitrary<{ detail: string; apply: (p: RequestParts) => RequestParts }> {
  return fc
    .record({
      merchant: fc.option(fc.stringMatching(/^[A-Za-z0-9-]{1,32}$/), { nil: undefined }),
      agent: fc.option(fc.stringMatching(/^[ -~]{0,40}$/), { nil: undefined }),
      upperNames: fc.boolean(),
      connectionClose: fc.boolean(),
    })
    .map((n) => ({
      detail: JSON.stringify(n),
      apply: (p: RequestParts) => {
        const q = clone(p);
        if (n.merchant !== undefined) q.headers.push(['X-Merch-Id', n.merchant]);
        if (n.agent !== undefined) q.headers.push(['User-Agent', n.agent.trim() || 'fuzz']);
        if (n.connectionClose) q.headers.push(['Connection', 'close']);
        if (n.upperNames) q.headers = q.headers.map(([k, v]) => [k.toUpperCase(), v]);
        return q;
      },
    }));
}

function changes(ctx: MutationContext): fc.Arbitrary<Change>[] {
  const { base, signedHeaders, checkedHeaders, signHeader, bodyLimitBytes } = ctx;
  const valueHeaders = [...signedHeaders, ...checkedHeaders];
  const path = base.target.split('?')[0] as string;
  const len = base.body.length;
  const op = fc.constantFrom('replace' as const, 'insert' as const, 'delete' as const);

  const method = fc
    .oneof(
      fc.constantFrom(
        'GET',
        'PUT',
        'DELETE',
        'PATCH',
        'OPTIONS',
        'HEAD',
        'TRACE',
        'CONNECT',
        'post',
        'Post',
        'POSTT',
        'POS',
        'P0ST',
        'PO ST',
        '',
      ),
      fc.stringMatching(/^[A-Z]{1,10}$/),
    )
    // PRI is HTTP/2's preface: Node closes such a connection by design (HTTP/1.1 allows no answer to it).
    .filter((m) => m !== 'POST' && m !== 'PRI')
    .map((m): Change => ({ kind: 'method', detail: m, apply: (p) => ({ ...clone(p), method: m }) }));

  const version = fc
    .constantFrom(
      'HTTP/1.2',
      'HTTP/3.0',
      'HTTP/1.11',
      'HTTP/11',
      'http/1.1',
      'HTTPS/1.1',
      'HTTP/1',
      'HTTP/ 1.1',
      'HTTP/9.9',
      'HTTP/1.1 x',
      'HTTP\\1.1',
    )
    .map((v): Change => ({ kind: 'version', detail: v, apply: (p) => ({ ...clone(p), version: v }) }));

  const pathChar = fc
    .record({ op, at: fc.nat(), ch: fc.constantFrom(...PATH_CHARS) })
    .map(({ op: o, at, ch }) => ({ o, at, ch, mutated: editString(path, o, at, ch) }))
    .filter(({ mutated }) => mutated !== path && mutated.length > 0)
    .map(({ o, at, ch, mutated }): Change => ({
      kind: 'path',
      detail: `${o} ${JSON.stringify(ch)} at ${at % (path.length + 1)}: ${mutated}`,
      apply: (p) => ({ ...clone(p), target: mutated + p.target.slice(path.length) }),
    }));

  const pathForm = fc
    .constantFrom(
      (t: string) => `http://localhost${t}`,
      (t: string) => t.replace('/notify', '/notify/'),
      (t: string) => t.replace('/api/', '/api//'),
      (t: string) => t.replace('/merch/', '/merch/./'),
      (t: string) => t.replace('/merch/', '/merch/x/../'),
      (t: string) => t.replace('notify', 'notif%79'),
      (t: string) => t.replace('notify', 'NOTIFY'),
      (t: string) => `*${t}`,
      (t: string) => t.slice(1),
    )
    .map((f): Change => ({
      kind: 'path-form',
      detail: f(base.target),
      apply: (p) => ({ ...clone(p), target: f(p.target) }),
    }));

  const query = fc
    .tuple(fc.constantFrom('?', '#', ';', '?&', '&', '%3F'), fc.stringMatching(/^[A-Za-z0-9=&%._~-]{0,16}$/))
    .map(([sep, rest]): Change => ({
      kind: 'query',
      detail: sep + rest,
      apply: (p) => ({ ...clone(p), target: p.target + sep + rest }),
    }));

  const headerValue = fc
    .record({
      name: fc.constantFrom(...valueHeaders),
      op: fc.constantFrom(
        'replace' as const,
        'insert' as const,
        'delete' as const,
        'empty' as const,
        'truncate' as const,
      ),
      at: fc.nat(),
      ch: fc.constantFrom(...PRINTABLE),
    })
    .map((r) => {
      const original = headerOf(base, r.name);
      const mutated =
        r.op === 'empty'
          ? ''
          : r.op === 'truncate'
            ? original.slice(0, r.at % original.length)
            : editString(original, r.op, r.at, r.ch);
      return { ...r, original, mutated };
    })
    // An equal value, or (for the signature) one that URL-decodes to the same bytes, is not a change.
    .filter(
      ({ name, original, mutated }) =>
        mutated.trim() !== original && (name !== signHeader || safeDecode(mutated) !== safeDecode(original)),
    )
    .map(({ name, op: o, mutated }): Change => ({
      kind: 'signed-header-value',
      detail: `${name} ${o}: ${JSON.stringify(mutated)}`,
      apply: (p) => setHeader(p, name, mutated),
    }));

  const headerName = fc
    .record({ name: fc.constantFrom(...signedHeaders), op, at: fc.nat(), ch: fc.constantFrom(...PRINTABLE, '_', ' ') })
    .map((r) => ({ ...r, mutated: editString(r.name, r.op, r.at, r.ch) }))
    .filter(({ name, mutated }) => mutated.toLowerCase() !== name && mutated.trim().length > 0)
    .map(({ name, mutated }): Change => ({
      kind: 'signed-header-name',
      detail: `${name} -> ${JSON.stringify(mutated)}`,
      apply: (p) => setHeader(p, name, headerOf(p, name), mutated),
    }));

  const dropHeader = fc
    .constantFrom(...signedHeaders, 'host')
    .map((name): Change => ({ kind: 'missing-header', detail: name, apply: (p) => setHeader(p, name, undefined) }));

  const duplicate = fc
    .record({
      name: fc.constantFrom(...valueHeaders, 'content-length', 'transfer-encoding'),
      same: fc.boolean(),
      atEnd: fc.boolean(),
    })
    .map(({ name, same, atEnd }): Change => ({
      kind: 'duplicate-header',
      detail: `${name} ${same ? 'same value' : 'other value'} ${atEnd ? 'at the end' : 'adjacent'}`,
      apply: (p) => {
        const q = clone(p);
        const value = name === 'transfer-encoding' ? 'chunked' : headerOf(p, name);
        const dup: [string, string] = [name, same ? value : `${value}0`];
        const i = q.headers.findIndex(([n]) => n.toLowerCase() === name);
        if (atEnd || i < 0) q.headers.push(dup);
        else q.headers.splice(i + 1, 0, dup);
        return q;
      },
    }));

  const contentLength = fc
    .oneof(
      fc.integer({ min: 1, max: len }).map((k) => String(len - k)),
      fc.integer({ min: 1, max: 5000 }).map((k) => String(len + k)),
      fc.constantFrom(
        'abc',
        '-1',
        '1e3',
        '0x10',
        `${len}.0`,
        `${len} ${len}`,
        '',
        `+${len}`,
        `${len},${len}`,
        `${len}0`,
      ),
      fc.constant('(none)'),
    )
    .filter((v) => !/^0*\d+$/.test(v.trim()) || Number(v.trim()) !== len)
    .map((v): Change => ({
      kind: 'content-length',
      detail: v,
      apply: (p) => setHeader(p, 'content-length', v === '(none)' ? undefined : v),
    }));

  const chunking = fc
    .record({
      sizes: fc.array(fc.integer({ min: 1, max: Math.max(1, len) }), { minLength: 1, maxLength: 8 }),
      flipAt: fc.nat(),
      mask: fc.integer({ min: 1, max: 255 }),
      te: fc.constantFrom('chunked', 'Chunked', 'gzip, chunked', 'CHUNKED'),
      framing: fc.constantFrom(
        'proper',
        'size-too-small',
        'size-too-large',
        'bad-hex',
        'no-final-chunk',
        'bare-lf',
        'extension',
        'trailer',
      ),
    })
    .map((c): Change => ({
      kind: 'chunked',
      detail: `te=${c.te} ${c.framing} sizes=${c.sizes.join(',')} flip@${c.flipAt % len}^${c.mask}`,
      apply: (p) => {
        // The body always changes too: a properly chunked unchanged body is the same signed request.
        let framed = chunked(flipByte(p.body, c.flipAt, c.mask), c.sizes).toString('latin1');
        if (c.framing === 'size-too-small')
          framed = framed.replace(/^[0-9a-f]+/, (h) =>
            parseInt(h, 16) > 1 ? (parseInt(h, 16) - 1).toString(16) : 'g',
          );
        if (c.framing === 'size-too-large')
          framed = framed.replace(/^[0-9a-f]+/, (h) => (parseInt(h, 16) + 1).toString(16));
        if (c.framing === 'bad-hex') framed = `zz${framed}`;
        if (c.framing === 'no-final-chunk') framed = framed.slice(0, -'0\r\n\r\n'.length);
        if (c.framing === 'bare-lf') framed = framed.replace(/\r\n/g, '\n');
        if (c.framing === 'extension') framed = framed.replace(/\r\n/, ';ext=1\r\n');
        if (c.framing === 'trailer') framed = `${framed.slice(0, -2)}X-Trailer: 1\r\n\r\n`;
        const q = setHeader(p, 'content-length', undefined);
        q.headers.push(['Transfer-Encoding', c.te]);
        q.body = Buffer.from(framed, 'latin1');
        return q;
      },
    }));

  const framingConflict = fc.constantFrom('cl+te', 'te-chunked-gzip', 'te-twice', 'te-identity').map((f): Change => ({
    kind: 'framing-conflict',
    detail: f,
    apply: (p) => {
      const q = clone(p);
      if (f === 'cl+te') q.headers.push(['Transfer-Encoding', 'chunked']);
      if (f === 'te-chunked-gzip') q.headers.push(['Transfer-Encoding', 'chunked, gzip']);
      if (f === 'te-twice') q.headers.push(['Transfer-Encoding', 'chunked'], ['Transfer-Encoding', 'chunked']);
      if (f === 'te-identity') q.headers.push(['Transfer-Encoding', 'identity']);
      return q;
    },
  }));

  const body = fc
    .record({
      op: fc.constantFrom('flip', 'insert', 'delete', 'empty', 'append', 'truncate'),
      at: fc.nat(),
      mask: fc.integer({ min: 1, max: 255 }),
      bytes: fc.uint8Array({ minLength: 1, maxLength: 16 }),
    })
    .map((r): Change => ({
      kind: 'body',
      detail: `${r.op} at ${r.at % len}`,
      apply: (p) => {
        const i = r.at % len;
        const b = p.body;
        const next =
          r.op === 'flip'
            ? flipByte(b, r.at, r.mask)
            : r.op === 'insert'
              ? Buffer.concat([b.subarray(0, i), Buffer.from(r.bytes), b.subarray(i)])
              : r.op === 'delete'
                ? Buffer.concat([b.subarray(0, i), b.subarray(i + 1)])
                : r.op === 'empty'
                  ? Buffer.alloc(0)
                  : r.op === 'append'
                    ? Buffer.concat([b, Buffer.from(r.bytes)])
                    : b.subarray(0, i);
        return withLength(p, next);
      },
    }));

  const truncate = fc.nat().map((at): Change => ({
    kind: 'truncated',
    detail: `cut at ${at}`,
    apply: (p) => {
      const bytes = serialize(p);
      return bytes.subarray(0, 1 + (at % (bytes.length - 1)));
    },
  }));

  const oversizedHeaders = fc
    .oneof(
      fc
        .integer({ min: 17 * 1024, max: 40 * 1024 })
        .map((n) => ({ what: `one header of ${n} bytes`, headers: [['X-Pad', 'p'.repeat(n)]] as [string, string][] })),
      fc.integer({ min: 2001, max: 2600 }).map((n) => ({
        what: `${n} headers before the signed ones`,
        headers: Array.from({ length: n }, (_, i) => [`h${i}`, '1'] as [string, string]),
      })),
    )
    .map(({ what, headers }): Change => ({
      kind: 'oversized-headers',
      detail: what,
      apply: (p) => {
        const q = clone(p);
        q.headers = [...headers, ...q.headers];
        return q;
      },
    }));

  const oversizedBody = fc
    .record({ extra: fc.integer({ min: 1, max: 10_000 }), sendAll: fc.boolean() })
    .map(({ extra, sendAll }): Change => ({
      kind: 'oversized-body',
      detail: `declared ${bodyLimitBytes + extra}, ${sendAll ? 'all sent' : 'headers and 1 KiB sent'}`,
      apply: (p) => {
        const q = setHeader(p, 'content-length', String(bodyLimitBytes + extra));
        q.body = Buffer.alloc(sendAll ? bodyLimitBytes + extra : 1024, 'a');
        return q;
      },
    }));

  const injection = fc
    .record({
      name: fc.constantFrom(...valueHeaders),
      at: fc.nat(),
      what: fc.constantFrom('\r', '\n', '\0', '\r\nX-Evil: 1', '\r\n folded', '\x7f'),
    })
    // A new header line after the whole value leaves the value as signed: it must cut the value short.
    .filter(
      ({ name, at, what }) =>
        what !== '\r\nX-Evil: 1' || at % (headerOf(base, name).length + 1) < headerOf(base, name).length,
    )
    .map(({ name, at, what }): Change => ({
      kind: 'header-injection',
      detail: `${name} += ${JSON.stringify(what)} at ${at}`,
      apply: (p) => setHeader(p, name, editString(headerOf(p, name), 'insert', at, what)),
    }));

  const syntax = fc
    .record({
      name: fc.constantFrom(...signedHeaders),
      form: fc.constantFrom('space-before-colon', 'no-colon', 'tab-in-name', 'empty-name', 'bare-lf-line-end'),
    })
    .map(({ name, form }): Change => ({
      kind: 'header-syntax',
      detail: `${name} ${form}`,
      apply: (p) => {
        const value = headerOf(p, name);
        const line =
          form === 'space-before-colon'
            ? `${name} : ${value}`
            : form === 'no-colon'
              ? `${name} ${value}`
              : form === 'tab-in-name'
                ? `${name}\t: ${value}`
                : form === 'empty-name'
                  ? `: ${value}`
                  : null;
        const others = p.headers.filter(([n]) => n.toLowerCase() !== name);
        const head = `${p.method} ${p.target} ${p.version}\r\n${others.map(([n, v]) => `${n}: ${v}\r\n`).join('')}${line === null ? `${name}: ${value}\n` : `${line}\r\n`}\r\n`;
        return Buffer.concat([Buffer.from(head, 'latin1'), p.body]);
      },
    }));

  const garbage = fc
    .oneof(
      fc.uint8Array({ minLength: 1, maxLength: 3000 }),
      fc.string({ minLength: 1, maxLength: 200 }).map((s) => new Uint8Array(Buffer.from(s, 'utf8'))),
    )
    .filter((bytes) => bytes.some((b) => b !== 0x0d && b !== 0x0a))
    .map((bytes): Change => ({ kind: 'garbage', detail: `${bytes.length} bytes`, apply: () => Buffer.from(bytes) }));

  const garbagePrefix = fc
    .uint8Array({ minLength: 1, maxLength: 64 })
    // Leading empty lines are allowed before a request (RFC 9112 2.2): only other bytes break it.
    .filter((bytes) => bytes.some((b) => b !== 0x0d && b !== 0x0a))
    .map((bytes): Change => ({
      kind: 'garbage-prefix',
      detail: `${bytes.length} bytes`,
      apply: (p) => Buffer.concat([Buffer.from(bytes), serialize(p)]),
    }));

  const expect = fc.constantFrom('nonsense', '100-continuex', '200-ok').map((v): Change => ({
    kind: 'expect',
    detail: v,
    apply: (p) => ({ ...clone(p), headers: [...p.headers, ['Expect', v]] }),
  }));

  return [
    method,
    version,
    pathChar,
    pathForm,
    query,
    headerValue,
    headerName,
    dropHeader,
    duplicate,
    contentLength,
    chunking,
    framingConflict,
    body,
    truncate,
    oversizedHeaders,
    oversizedBody,
    injection,
    syntax,
    garbage,
    garbagePrefix,
    expect,
  ];
}

/** Mutants of the base request: one breaking change, optional noise under it, split into 1 to 4 writes. */
export function mutantArb(ctx: MutationContext): fc.Arbitrary<Mutant> {
  const weighted = changes(ctx).map((arbitrary) => ({ arbitrary, weight: 1 }));
  return fc
    .record({
      change: fc.oneof(...weighted),
      noise: fc.option(noiseArb(), { nil: undefined }),
      pieces: fc.integer({ min: 1, max: 4 }),
    })
    .map(({ change, noise, pieces }) => {
      const parts = noise ? noise.apply(clone(ctx.base)) : clone(ctx.base);
      const out = change.apply(parts);
      const bytes = Buffer.isBuffer(out) ? out : serialize(out);
      const head = Buffer.isBuffer(out) ? bytes.subarray(0, 5).toString('latin1') === 'HEAD ' : out.method === 'HEAD';
      return {
        kind: change.kind,
        detail: `${change.detail}${noise ? ` + noise ${noise.detail}` : ''}`,
        bytes,
        pieces,
        head,
      };
    });
}

/** The bytes split into `n` writes at evenly spaced points (the parser must cope with any split). */
export function splitInto(bytes: Buffer, n: number): Buffer[] {
  if (n <= 1 || bytes.length < n) return [bytes];
  const step = Math.ceil(bytes.length / n);
  return Array.from({ length: n }, (_, i) => bytes.subarray(i * step, (i + 1) * step)).filter((b) => b.length > 0);
}
