// The client against the real gateway: the web_counter example
// (examples/web_counter.rs), started once for this file.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { connect } from "../../dist/index.js";
import { waitFor } from "../support/fake.mjs";
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

    test("a push from the service reaches the client actor inbox", async () => {
      const c = await connect(server.url, { ...options, ...fast });
      try {
        const inbox = [];
        c.actor((msg) => inbox.push(msg));
        await c.service("counter").ask({ push: { hello: "from the server" } });
        // The gateway sends a push before the reply that follows it.
        assert.deepEqual(inbox, [{ hello: "from the server" }]);
      } finally {
        c.close();
      }
    });

    test("after the server drops the connection the session is resumed and still works", async () => {
      const c = await connect(server.url, { ...options, ...fast });
      const watcher = await connect(server.url, { ...options, ...fast });
      try {
        const seen = [];
        c.subscribe("counter", (msg) => seen.push(msg));
        const session = c.sessionId;
        const before = await c.service("counter").ask("get");
        await c.service("counter").ask("drop");
        if (options.transport !== "longpoll") {
          // A WebSocket closes with 1012 and the client resumes; a long-poll
          // session just polls again.
          await waitFor(() => c.stats.reconnects >= 1 && c.state === "open", 10000, "a resumed session");
        }
        assert.equal(c.sessionId, session);
        const value = await watcher.service("counter").ask({ add: 1 });
        assert.ok(value > before);
        await waitFor(() => seen.includes(value), 5000, `a publication of ${value} after the resume`);
      } finally {
        c.close();
        watcher.close();
      }
    });

    test("the server's errors reach the ask: unknown service, bad message; too large is refused at the client", async () => {
      const c = await connect(server.url, { ...options, ...fast });
      try {
        await assert.rejects(c.service("nope").ask("get"), (e) => e.code === "unknown_service");
        await assert.rejects(c.service("counter").ask({ frobnicate: true }), (e) => e.code === "bad_message");
        // Over the gateway's max_frame (64 KiB): refused before sending; the session goes on.
        await assert.rejects(c.service("counter").ask({ push: "x".repeat(70 * 1024) }), (e) => e.code === "too_large");
        assert.equal(typeof (await c.service("counter").ask("get")), "number");
        assert.equal(c.stats.reconnects, 0);
      } finally {
        c.close();
      }
    });
  });
}
