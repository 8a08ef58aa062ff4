import assert from "node:assert/strict";
import { test } from "node:test";

import { backoffDelay } from "../../dist/index.js";

const r = { initialDelayMs: 100, maxDelayMs: 1000, maxAttempts: Infinity };

test("the delay doubles per attempt, between half and all of its ceiling", () => {
  assert.equal(backoffDelay(0, r, () => 0), 50);
  assert.equal(backoffDelay(0, r, () => 1), 100);
  assert.equal(backoffDelay(2, r, () => 0), 200);
  assert.equal(backoffDelay(2, r, () => 1), 400);
});

test("the delay is capped at maxDelayMs, however many attempts", () => {
  assert.equal(backoffDelay(50, r, () => 1), 1000);
  assert.equal(backoffDelay(5000, r, () => 0), 500);
});

test("two clients dropped together get different delays", () => {
  const delays = new Set(Array.from({ length: 20 }, () => backoffDelay(3, r)));
  assert.ok(delays.size > 1);
});
