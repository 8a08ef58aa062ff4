// A small MessagePack codec, enough for the gateway's frames (rmp-serde with
// named fields: structs are maps). Hand-written because the package has no
// runtime dependencies. Integers beyond 2^53 decode to BigInt so no value is
// silently rounded; binary data decodes to Uint8Array; extension types are
// rejected with a typed error rather than guessed at.

import { VolleyError } from "./errors.js";

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder("utf-8", { fatal: true });

class Writer {
  private buf = new Uint8Array(128);
  private view = new DataView(this.buf.buffer);
  length = 0;

  private reserve(n: number): void {
    if (this.length + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.length + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }
  u8(v: number): void {
    this.reserve(1);
    this.buf[this.length++] = v;
  }
  u16(v: number): void {
    this.reserve(2);
    this.view.setUint16(this.length, v);
    this.length += 2;
  }
  u32(v: number): void {
    this.reserve(4);
    this.view.setUint32(this.length, v);
    this.length += 4;
  }
  u64(v: bigint): void {
    this.reserve(8);
    this.view.setBigUint64(this.length, v);
    this.length += 8;
  }
  i64(v: bigint): void {
    this.reserve(8);
    this.view.setBigInt64(this.length, v);
    this.length += 8;
  }
  f64(v: number): void {
    this.reserve(8);
    this.view.setFloat64(this.length, v);
    this.length += 8;
  }
  bytes(b: Uint8Array): void {
    this.reserve(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
  }
  result(): Uint8Array {
    return this.buf.slice(0, this.length);
  }
}

/** Encodes a JSON-like value (plus Uint8Array and BigInt) as MessagePack. */
export function encodeMsgpack(value: unknown): Uint8Array {
  const w = new Writer();
  writeValue(w, value, 0);
  return w.result();
}

const MAX_DEPTH = 256;

function writeValue(w: Writer, value: unknown, depth: number): void {
  if (depth > MAX_DEPTH) throw new VolleyError("bad_message", "value nested too deeply for MessagePack");
  if (value === null || value === undefined) return w.u8(0xc0);
  switch (typeof value) {
    case "boolean":
      return w.u8(value ? 0xc3 : 0xc2);
    case "number":
      return Number.isSafeInteger(value) ? writeInt(w, BigInt(value)) : writeFloat(w, value);
    case "bigint":
      return writeInt(w, value);
    case "string":
      return writeString(w, value);
    case "object":
      if (value instanceof Uint8Array) return writeBinary(w, value);
      if (Array.isArray(value)) {
        writeLength(w, value.length, 0x90, 0xdc);
        for (const item of value) writeValue(w, item, depth + 1);
        return;
      }
      return writeMap(w, value as Record<string, unknown>, depth);
    default:
      throw new VolleyError("bad_message", `cannot encode a ${typeof value} as MessagePack`);
  }
}

function writeMap(w: Writer, value: Record<string, unknown>, depth: number): void {
  // JSON.stringify drops undefined fields; do the same so both encodings agree.
  const entries = Object.entries(value).filter(([, v]) => v !== undefined);
  writeLength(w, entries.length, 0x80, 0xde);
  for (const [k, v] of entries) {
    writeString(w, k);
    writeValue(w, v, depth + 1);
  }
}

function writeInt(w: Writer, v: bigint): void {
  if (v >= 0n) {
    if (v < 128n) return w.u8(Number(v));
    if (v < 256n) return (w.u8(0xcc), w.u8(Number(v)));
    if (v < 65536n) return (w.u8(0xcd), w.u16(Number(v)));
    if (v < 4294967296n) return (w.u8(0xce), w.u32(Number(v)));
    if (v < 1n << 64n) return (w.u8(0xcf), w.u64(v));
  } else {
    if (v >= -32n) return w.u8(0x100 + Number(v));
    if (v >= -128n) return (w.u8(0xd0), w.u8(0x100 + Number(v)));
    if (v >= -32768n) return (w.u8(0xd1), w.u16(0x10000 + Number(v)));
    if (v >= -2147483648n) return (w.u8(0xd2), w.u32(0x100000000 + Number(v)));
    if (v >= -(1n << 63n)) return (w.u8(0xd3), w.i64(v));
  }
  throw new VolleyError("bad_message", `integer ${v} does not fit in 64 bits`);
}

function writeFloat(w: Writer, v: number): void {
  w.u8(0xcb);
  w.f64(v);
}

function writeString(w: Writer, s: string): void {
  const b = textEncoder.encode(s);
  if (b.length < 32) w.u8(0xa0 | b.length);
  else if (b.length < 256) (w.u8(0xd9), w.u8(b.length));
  else writeLength(w, b.length, -1, 0xda);
  w.bytes(b);
}

function writeBinary(w: Writer, b: Uint8Array): void {
  if (b.length < 256) (w.u8(0xc4), w.u8(b.length));
  else if (b.length < 65536) (w.u8(0xc5), w.u16(b.length));
  else (w.u8(0xc6), w.u32(b.length));
  w.bytes(b);
}

/** A fix form (when `fix >= 0` and n < 16), else the 16-bit tag, else the 32-bit tag (`tag16 + 1`). */
function writeLength(w: Writer, n: number, fix: number, tag16: number): void {
  if (fix >= 0 && n < 16) w.u8(fix | n);
  else if (n < 65536) (w.u8(tag16), w.u16(n));
  else (w.u8(tag16 + 1), w.u32(n));
}

/** Decodes one MessagePack value that fills `bytes` exactly. */
export function decodeMsgpack(bytes: Uint8Array): unknown {
  const r = new Reader(bytes);
  const value = r.value(0);
  if (r.pos !== bytes.length) throw new VolleyError("bad_frame", "trailing bytes after a MessagePack value");
  return value;
}

class Reader {
  pos = 0;
  private readonly view: DataView;
  constructor(private readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  private need(n: number): number {
    if (this.pos + n > this.bytes.length) throw new VolleyError("bad_frame", "truncated MessagePack value");
    const at = this.pos;
    this.pos += n;
    return at;
  }
  private u8(): number {
    return this.view.getUint8(this.need(1));
  }
  private u16(): number {
    return this.view.getUint16(this.need(2));
  }
  private u32(): number {
    return this.view.getUint32(this.need(4));
  }
  private big(v: bigint): number | bigint {
    return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  }
  private str(n: number): string {
    const at = this.need(n);
    try {
      return textDecoder.decode(this.bytes.subarray(at, at + n));
    } catch {
      throw new VolleyError("bad_frame", "a MessagePack string is not UTF-8");
    }
  }
  private bin(n: number): Uint8Array {
    const at = this.need(n);
    return this.bytes.slice(at, at + n);
  }
  private array(n: number, depth: number): unknown[] {
    const out: unknown[] = [];
    for (let i = 0; i < n; i++) out.push(this.value(depth + 1));
    return out;
  }
  private map(n: number, depth: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (let i = 0; i < n; i++) {
      const key = this.value(depth + 1);
      if (typeof key !== "string" && typeof key !== "number") {
        throw new VolleyError("bad_frame", "a MessagePack map key is neither a string nor a number");
      }
      Object.defineProperty(out, String(key), { value: this.value(depth + 1), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }

  value(depth: number): unknown {
    if (depth > MAX_DEPTH) throw new VolleyError("bad_frame", "MessagePack value nested too deeply");
    const tag = this.u8();
    if (tag < 0x80) return tag;
    if (tag >= 0xe0) return tag - 0x100;
    if ((tag & 0xf0) === 0x80) return this.map(tag & 0x0f, depth);
    if ((tag & 0xf0) === 0x90) return this.array(tag & 0x0f, depth);
    if ((tag & 0xe0) === 0xa0) return this.str(tag & 0x1f);
    return this.tagged(tag, depth);
  }

  private tagged(tag: number, depth: number): unknown {
    switch (tag) {
      case 0xc0: return null;
      case 0xc2: return false;
      case 0xc3: return true;
      case 0xc4: return this.bin(this.u8());
      case 0xc5: return this.bin(this.u16());
      case 0xc6: return this.bin(this.u32());
      case 0xca: return this.view.getFloat32(this.need(4));
      case 0xcb: return this.view.getFloat64(this.need(8));
      case 0xcc: return this.u8();
      case 0xcd: return this.u16();
      case 0xce: return this.u32();
      case 0xcf: return this.big(this.view.getBigUint64(this.need(8)));
      case 0xd0: return this.view.getInt8(this.need(1));
      case 0xd1: return this.view.getInt16(this.need(2));
      case 0xd2: return this.view.getInt32(this.need(4));
      case 0xd3: return this.big(this.view.getBigInt64(this.need(8)));
      case 0xd9: return this.str(this.u8());
      case 0xda: return this.str(this.u16());
      case 0xdb: return this.str(this.u32());
      case 0xdc: return this.array(this.u16(), depth);
      case 0xdd: return this.array(this.u32(), depth);
      case 0xde: return this.map(this.u16(), depth);
      case 0xdf: return this.map(this.u32(), depth);
      default:
        throw new VolleyError("bad_frame", `unsupported MessagePack type 0x${tag.toString(16)}`);
    }
  }
}
