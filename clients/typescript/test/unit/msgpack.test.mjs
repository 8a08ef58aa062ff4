import assert from "node:assert/strict";
import { test } from "node:test";

import { decodeMsgpack, encodeMsgpack } from "../../dist/index.js";

const hex = (b) => Buffer.from(b).toString("hex");

test("known encodings (as rmp-serde writes them)", () => {
  assert.equal(hex(encodeMsgpack({ t: "ping", n: 1 })), "82a174a470696e67a16e01");
  assert.equal(hex(encodeMsgpack(-1)), "ff");
  assert.equal(hex(encodeMsgpack(300)), "cd012c");
  assert.equal(hex(encodeMsgpack(-200)), "d1ff38");
  assert.equal(hex(encodeMsgpack(1.5)), "cb3ff8000000000000");
  assert.equal(hex(encodeMsgpack(null)), "c0");
  assert.equal(hex(encodeMsgpack([true, false])), "92c3c2");
});

test("values survive a round trip", () => {
  const values = [
    0, 127, 128, 255, 256, 65535, 65536, 2 ** 32, Number.MAX_SAFE_INTEGER, -32, -33, -128, -129, -32768, -32769, -(2 ** 31), -(2 ** 31) - 1,
    Number.MIN_SAFE_INTEGER, 0.1, -1e300, "", "é🎉", "x".repeat(31), "x".repeat(32), "x".repeat(300), "x".repeat(70000),
    [], Array.from({ length: 20 }, (_, i) => i), {}, { a: { b: [1, { c: null }] } },
    Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, i])),
  ];
  for (const v of values) assert.deepEqual(decodeMsgpack(encodeMsgpack(v)), v);
});

test("64-bit integers beyond 2^53 decode to BigInt, not a rounded number", () => {
  assert.equal(decodeMsgpack(Uint8Array.from([0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])), 2n ** 64n - 1n);
  assert.equal(decodeMsgpack(encodeMsgpack(2n ** 60n)), 2n ** 60n);
});

test("binary data round-trips as Uint8Array; undefined fields are left out like JSON does", () => {
  assert.deepEqual(decodeMsgpack(encodeMsgpack(Uint8Array.from([1, 2, 3]))), Uint8Array.from([1, 2, 3]));
  assert.deepEqual(decodeMsgpack(encodeMsgpack({ a: 1, b: undefined })), { a: 1 });
});

test("bad input is a typed error, not a crash", () => {
  for (const bytes of [[0xa5, 0x61], [0xc1], [0xd4, 0, 0], [0x01, 0x02], [0xa1, 0xff], [0x81, 0x90, 0x01]]) {
    assert.throws(() => decodeMsgpack(Uint8Array.from(bytes)), (e) => e.name === "VolleyError" && e.code === "bad_frame");
  }
});

test("a __proto__ key stays a plain field", () => {
  const v = decodeMsgpack(Uint8Array.from([0x81, 0xa9, ...Buffer.from("__proto__"), 0x81, 0xa1, 0x78, 0x01]));
  assert.equal(Object.getPrototypeOf(v), Object.prototype);
  assert.deepEqual(Object.keys(v), ["__proto__"]);
});
