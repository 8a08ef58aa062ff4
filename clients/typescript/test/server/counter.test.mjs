// The client against the real gateway: the web_counter example
// (examples/web_counter.rs), started once for this file.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { connect } from "../../dist/index.js";
import { nextEvent, waitFor } from "../support/fake.mjs";
import { startCounterServer } from "../support/server.mjs";

let server;
before(async () => {
  server = await startCounterServer();
});
after(async () => {
  await server?.stop();
});

const fast = { reconnect: { initialDelayMs: 20, maxDelayMs: 200 } };

for (const [name, options] of [
  ["websocket, json", { transport: "websocket" }],
  ["websocket, msgpack", { transport: "websocket", encoding: "msgpack" }],
  ["long-poll", { transport: "longpoll" }],
]) {
  describe(name, () => {
    test("ask get and add; another client sees the change on topic counter", async () => {
      const a = await connect(server.url, { ...options, ...fast });
      const b = await connect(server.url, { ...options, ...fast });
      try {
        const seen = [];
        b.subscribe("counter", (msg) => seen.push(msg));
        // The subscription is in place once an ask sent after it is answered.
        await b.service("counter").ask("get");
        const before = await a.service("counter").ask("get");
        assert.equal(typeof before, "number");
        const after = await a.service("counter").ask({ add: 5 });
        assert.equal(after, before + 5);
        await waitFor(() => seen.includes(after), 5000, `a publication of ${after}`);
      } finally {
        a.close();
        b.close();
      }
    });

    test("the server's errors reach the ask: unknown service, bad message", async () => {
      const c = await connect(server.url, { ...options, ...fast });
      try {
        await assert.rejects(c.service("nope").ask("get"), (e) => e.code === "unknown_service");
        await assert.rejects(c.service("counter").ask({ frobnicate: true }), (e) => e.code === "bad_message");
      } finally {
        c.close();
      }
    });
  });
}
