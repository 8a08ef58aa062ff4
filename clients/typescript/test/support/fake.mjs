// A fake transport for unit tests: each connection the client opens is
// recorded, and the test plays the server on it.

export class FakeConnection {
  constructor(target) {
    this.target = target;
    this.sent = [];
    this.hello = null;
    this.bufferedAmount = 0;
    this.maxFrame = 0;
    this.closed = null;
    this.onframe = () => {};
    this.onclose = () => {};
  }
  start(hello) {
    this.hello = hello;
  }
  send(frame) {
    // Encode as the real transport would, so an unencodable frame fails here too.
    const text = JSON.stringify(frame);
    if (this.maxFrame > 0 && text.length > this.maxFrame) throw Object.assign(new Error("too large"), { code: "too_large" });
    this.sent.push(JSON.parse(text));
  }
  close(final) {
    this.closed = { final };
  }
  // ---- the test's side ----
  welcome(session = "s1", resumed = false, extra = {}) {
    this.onframe({ t: "welcome", v: 1, session, resumed, heartbeat_ms: 15000, max_frame: 65536, ...extra });
  }
  deliver(frame) {
    this.onframe(frame);
  }
  drop(code = 1006, reason = "dropped", reached = true) {
    this.onclose({ code, reason, reached });
  }
  sentOf(t) {
    return this.sent.filter((f) => f.t === t);
  }
}

export function fakeServer() {
  const connections = [];
  const factory = (target) => {
    const c = new FakeConnection(target);
    connections.push(c);
    return c;
  };
  return { connections, factory, last: () => connections[connections.length - 1] };
}

/** Waits until `cond()` is truthy, polling, or fails after `ms`. */
export async function waitFor(cond, ms = 5000, what = "condition") {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = cond();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Resolves with the next emission of a client event. */
export function nextEvent(client, event) {
  return new Promise((resolve) => {
    const off = client.on(event, (e) => {
      off();
      resolve(e);
    });
  });
}
