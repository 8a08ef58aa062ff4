// Heartbeats against the real gateway: a server that stops answering (the
// process frozen with SIGSTOP, so no socket closes) is detected by the
// pings it leaves unanswered, and the session is resumed once it is back.
// A server of its own, since it is frozen.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

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

test("a frozen server is detected by unanswered pings; the session resumes when it thaws", async () => {
  const c = await connect(server.url, {
    transport: "websocket",
    heartbeatMs: 100,
    maxMissedPongs: 2,
    connectTimeoutMs: 3000,
    reconnect: { initialDelayMs: 20, maxDelayMs: 100 },
  });
  try {
    const session = c.sessionId;
    const before = await c.service("counter").ask("get");
    const lost = nextEvent(c, "reconnecting");
    server.signal("SIGSTOP");
    assert.equal((await lost).code, 4408);
    const pending = c.service("counter").ask({ add: 1 }, { timeout: 20000 });
    server.signal("SIGCONT");
    assert.equal(await pending, before + 1);
    await waitFor(() => c.state === "open", 10000, "open again");
    assert.equal(c.sessionId, session);
  } finally {
    server.signal("SIGCONT");
    c.close();
  }
});
