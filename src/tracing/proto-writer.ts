/**
 * A protobuf writer over one growing Buffer: varints, fixed-width numbers, strings and hex ids
 * written in place. A length-delimited field reserves one byte for its length and moves its content
 * once if the length needs more (the common attribute and id fields never do), so the output is
 * the canonical encoding, byte for byte what a two-pass writer produces.
 */
export class ProtoWriter {
  private buf: Buffer;
  pos = 0;

  constructor(initialBytes = 16 * 1024) {
    this.buf = Buffer.allocUnsafe(initialBytes);
  }

  private room(bytes: number): void {
    if (this.pos + bytes <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + bytes) size *= 2;
    const grown = Buffer.allocUnsafe(size);
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
  }

  tag(field: number, wireType: 0 | 1 | 2 | 5): void {
    this.varint((field << 3) | wireType);
  }

  /** A uint32/uint64 below 2^64, or an int64 (negative: ten bytes, two's complement). */
  varint(value: number): void {
    this.room(10);
    const buf = this.buf;
    if (value >= 0 && value <= 0xffffffff) {
      let v = value >>> 0;
      while (v > 0x7f) {
        buf[this.pos++] = (v & 0x7f) | 0x80;
        v >>>= 7;
      }
      buf[this.pos++] = v;
      return;
    }
    let [low, high] = longBits(value);
    while (high > 0 || low > 0x7f) {
      buf[this.pos++] = (low & 0x7f) | 0x80;
      low = ((low >>> 7) | (high << 25)) >>> 0;
      high >>>= 7;
    }
    buf[this.pos++] = low & 0x7f;
  }

  fixed32(value: number): void {
    this.room(4);
    this.pos = this.buf.writeUInt32LE(value >>> 0, this.pos);
  }

  fixed64(low: number, high: number): void {
    this.room(8);
    this.pos = this.buf.writeUInt32LE(low >>> 0, this.pos);
    this.pos = this.buf.writeUInt32LE(high >>> 0, this.pos);
  }

  double(value: number): void {
    this.room(8);
    this.pos = this.buf.writeDoubleLE(value, this.pos);
  }

  /** A length-prefixed UTF-8 string (lone surrogates become U+FFFD, as with TextEncoder). */
  string(value: string): void {
    this.room(value.length * 3 + 5);
    const start = this.pos;
    this.pos = start + 1;
    this.pos += this.buf.write(value, this.pos, 'utf8');
    this.close(start);
  }

  /** A length-prefixed byte string given in hex (trace and span ids). */
  hex(value: string): void {
    const bytes = value.length >>> 1;
    this.room(bytes + 5);
    this.varint(bytes);
    this.pos += this.buf.write(value, this.pos, bytes, 'hex');
  }

  bytes(value: Uint8Array): void {
    this.room(value.length + 5);
    this.varint(value.length);
    this.buf.set(value, this.pos);
    this.pos += value.length;
  }

  /** Starts a length-delimited field's content; `close(start)` writes its length. */
  open(): number {
    this.room(1);
    return this.pos++;
  }

  close(start: number): void {
    const length = this.pos - start - 1;
    const extra = varintSize(length) - 1;
    if (extra > 0) {
      this.room(extra);
      this.buf.copyWithin(start + 1 + extra, start + 1, this.pos);
      this.pos += extra;
    }
    const end = this.pos;
    this.pos = start;
    this.varint(length);
    this.pos = end;
  }

  /** The bytes written so far, copied out; the writer starts again from empty. */
  take(): Buffer {
    const out = Buffer.from(this.buf.subarray(0, this.pos));
    this.pos = 0;
    return out;
  }

  get length(): number {
    return this.pos;
  }

  /** Appends the bytes written so far to another writer. */
  copyTo(other: ProtoWriter): void {
    other.room(this.pos);
    this.buf.copy(other.buf, other.pos, 0, this.pos);
    other.pos += this.pos;
  }
}

/** A 64-bit integer's low and high 32 bits (two's complement when negative), exact for every integral double. */
function longBits(value: number): [number, number] {
  const abs = Math.abs(value);
  let low = abs >>> 0;
  let high = (abs / 0x100000000) >>> 0;
  if (value < 0) {
    low = ~low >>> 0;
    high = ~high >>> 0;
    low = (low + 1) >>> 0;
    if (low === 0) high = (high + 1) >>> 0;
  }
  return [low, high];
}

export function varintSize(value: number): number {
  if (value < 0x80) return 1;
  if (value < 0x4000) return 2;
  if (value < 0x200000) return 3;
  if (value < 0x10000000) return 4;
  return 5;
}
