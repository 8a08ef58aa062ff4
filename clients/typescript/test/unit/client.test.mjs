import assert from "node:assert/strict";
import { test } from "node:test";

import { Client, connect, VolleyError } from "../../dist/index.js";
import { fakeServer, nextEvent, waitFor } from "../support/fake.mjs";

const fast = { reconnect: { initialDelayMs: 1, maxDelayMs: 5 } };

async function open(options = {}) {
  const server = fakeServer();
  const client = new Client("http://gw.test/base/", { connectionFactory: server.factory, ...fast, ...options });
  server.last().welcome();
  await client.ready;
  return { server, client, conn: server.last() };
}

test("the hello comes first, with the version and the token", async () => {
  const server = fakeServer();
  const pending = connect("ws://gw.test/base", { connectionFactory: server.factory, token: "t0k" });
  const conn = server.last();
  assert.deepEqual(conn.hello, { t: "hello", v: 1, token: "t0k" });
  assert.equal(conn.target.baseUrl, "http://gw.test/base");
  assert.equal(conn.target.kind, "websocket");
  conn.welcome("abc");
  const client = await pending;
  assert.equal(client.state, "open");
  assert.equal(client.sessionId, "abc");
  client.close();
});

test("an ask resolves with its reply and carries its timeout", async () => {
  const { client, conn } = await open();
  const answer = client.service("counter").ask("get", { timeout: 3000 });
  const [ask] = await waitFor(() => conn.sentOf("ask").length && conn.sentOf("ask"));
  assert.equal(ask.service, "counter");
  assert.equal(ask.msg, "get");
  assert.ok(ask.timeout_ms > 2000 && ask.timeout_ms <= 3000);
  conn.deliver({ t: "reply", seq: 1, id: ask.id, msg: 42 });
  assert.equal(await answer, 42);
  client.close();
});

test("an error frame rejects its ask with the server's code", async () => {
  const { client, conn } = await open();
  const answer = client.service("nope").ask(1);
  const [ask] = await waitFor(() => conn.sentOf("ask").length && conn.sentOf("ask"));
  conn.deliver({ t: "error", seq: 1, id: ask.id, code: "unknown_service", text: "no service nope" });
  await assert.rejects(answer, (e) => e instanceof VolleyError && e.code === "unknown_service");
  client.close();
});

test("an ask without a reply times out, and a late reply is ignored", async () => {
  const { client, conn } = await open();
  const answer = client.service("counter").ask("get", { timeout: 30 });
  await assert.rejects(answer, (e) => e.code === "timeout");
  const [ask] = conn.sentOf("ask");
  conn.deliver({ t: "reply", seq: 1, id: ask.id, msg: 1 });
  assert.equal(client.state, "open");
  client.close();
});

test("subscribe sends sub once per topic, pub reaches every handler, the last unsubscribe sends unsub", async () => {
  const { client, conn } = await open();
  const a = [];
  const b = [];
  const offA = client.subscribe("counter", (m) => a.push(m));
  const offB = client.subscribe("counter", (m) => b.push(m));
  assert.deepEqual(conn.sentOf("sub"), [{ t: "sub", topic: "counter" }]);
  conn.deliver({ t: "pub", seq: 1, topic: "counter", msg: 7 });
  assert.deepEqual([a, b], [[7], [7]]);
  offA();
  assert.equal(conn.sentOf("unsub").length, 0);
  offB();
  assert.deepEqual(conn.sentOf("unsub"), [{ t: "unsub", topic: "counter" }]);
  client.close();
});

test("pushes reach the named client actor; pushes to nobody are counted as dead letters", async () => {
  const { client, conn } = await open();
  const inbox = [];
  const alerts = [];
  client.actor((m) => inbox.push(m));
  client.actor("alerts", (m) => alerts.push(m));
  const dead = nextEvent(client, "deadletter");
  conn.deliver({ t: "push", seq: 1, to: "inbox", msg: "hi" });
  conn.deliver({ t: "push", seq: 2, to: "alerts", msg: "fire" });
  conn.deliver({ t: "push", seq: 3, to: "ghost", msg: "boo" });
  assert.deepEqual([inbox, alerts], [["hi"], ["fire"]]);
  assert.deepEqual(await dead, { to: "ghost", msg: "boo" });
  assert.equal(client.stats.deadLetters, 1);
  client.close();
});

test("a throwing handler is reported and the session goes on", async () => {
  const { client, conn } = await open();
  const errors = [];
  client.on("error", (e) => errors.push(e));
  const got = [];
  client.subscribe("t", () => {
    throw new Error("boom");
  });
  client.actor((m) => got.push(m));
  conn.deliver({ t: "pub", seq: 1, topic: "t", msg: 1 });
  conn.deliver({ t: "push", seq: 2, to: "inbox", msg: 2 });
  assert.equal(errors.length, 1);
  assert.deepEqual(got, [2]);
  client.close();
});

test("the client answers server pings and acknowledges every 32 frames", async () => {
  const { client, conn } = await open();
  conn.deliver({ t: "ping", n: 9 });
  assert.deepEqual(conn.sentOf("pong"), [{ t: "pong", n: 9 }]);
  for (let seq = 1; seq <= 32; seq++) conn.deliver({ t: "pub", seq, topic: "x", msg: seq });
  assert.deepEqual(conn.sentOf("ack"), [{ t: "ack", seq: 32 }]);
  client.close();
});

test("after a drop the client resumes with last_seq, re-subscribes, drops duplicates, and resends the asks the replay did not answer", async () => {
  const { server, client, conn } = await open();
  const pubs = [];
  client.subscribe("counter", (msg) => pubs.push(msg));
  const answered = client.service("counter").ask("add 1");
  const unanswered = client.service("counter").ask("add 2");
  const answeredInReplay = client.service("counter").ask("add 3");
  const asks = await waitFor(() => conn.sentOf("ask").length === 3 && conn.sentOf("ask"));
  conn.deliver({ t: "reply", seq: 1, id: asks[0].id, msg: 1 });
  conn.deliver({ t: "pub", seq: 2, topic: "counter", msg: 1 });
  assert.equal(await answered, 1);

  const reconnecting = nextEvent(client, "reconnecting");
  conn.drop(1006);
  await reconnecting;
  assert.equal(client.state, "reconnecting");
  const conn2 = await waitFor(() => server.connections.length === 2 && server.last());
  assert.deepEqual(conn2.hello, { t: "hello", v: 1, resume: "s1", last_seq: 2 });
  const opened = nextEvent(client, "open");
  conn2.welcome("s1", true);
  assert.deepEqual(await opened, { session: "s1", resumed: true, transport: "websocket" });
  assert.deepEqual(conn2.sentOf("sub"), [{ t: "sub", topic: "counter" }]);
  // Nothing is resent before the server's replay has come in: the client pings first.
  const [barrier] = conn2.sentOf("ping");
  assert.ok(barrier);
  assert.equal(conn2.sentOf("ask").length, 0);
  // The replay: what the server held past last_seq; the client skips what it had.
  conn2.deliver({ t: "pub", seq: 2, topic: "counter", msg: 1 });
  conn2.deliver({ t: "reply", seq: 3, id: asks[2].id, msg: 4 });
  conn2.deliver({ t: "pong", n: barrier.n });
  assert.equal(await answeredInReplay, 4);
  const resent = await waitFor(() => conn2.sentOf("ask").length && conn2.sentOf("ask"));
  assert.deepEqual(resent.map((a) => [a.id, a.msg]), [[asks[1].id, "add 2"]]);
  conn2.deliver({ t: "reply", seq: 4, id: asks[1].id, msg: 6 });
  conn2.deliver({ t: "reply", seq: 5, id: asks[1].id, msg: 6 });
  assert.equal(await unanswered, 6);
  assert.deepEqual(pubs, [1]);
  assert.equal(client.stats.duplicates, 1);
  assert.equal(client.stats.reconnects, 1);
  client.close();
});

test("asks made after a resume are not resent when the resume's pong comes", async () => {
  const { server, client, conn } = await open();
  conn.drop();
  const conn2 = await waitFor(() => server.connections.length === 2 && server.last());
  conn2.welcome("s1", true);
  const fresh = client.service("counter").ask("get");
  await waitFor(() => conn2.sentOf("ask").length === 1);
  conn2.deliver({ t: "pong", n: conn2.sentOf("ping")[0].n });
  await new Promise((r) => setTimeout(r, 20)); // time passing is what is tested: no second copy goes out
  assert.equal(conn2.sentOf("ask").length, 1);
  conn2.deliver({ t: "reply", seq: 1, id: conn2.sentOf("ask")[0].id, msg: 0 });
  assert.equal(await fresh, 0);
  client.close();
});

test("a new session (resumed false) gets the open asks at once", async () => {
  const { server, client, conn } = await open();
  const pending = client.service("counter").ask("get");
  await waitFor(() => conn.sentOf("ask").length === 1);
  conn.drop();
  const conn2 = await waitFor(() => server.connections.length === 2 && server.last());
  conn2.welcome("s2", false);
  const [ask] = await waitFor(() => conn2.sentOf("ask").length && conn2.sentOf("ask"));
  assert.equal(conn2.sentOf("ping").length, 0);
  conn2.deliver({ t: "reply", seq: 1, id: ask.id, msg: 9 });
  assert.equal(await pending, 9);
  client.close();
});

test("a session the server did not keep starts its seq again at 1", async () => {
  const { server, client, conn } = await open();
  const pubs = [];
  client.subscribe("t", (m) => pubs.push(m));
  conn.deliver({ t: "pub", seq: 1, topic: "t", msg: "a" });
  conn.drop();
  const conn2 = await waitFor(() => server.connections.length === 2 && server.last());
  conn2.welcome("s2", false);
  conn2.deliver({ t: "pub", seq: 1, topic: "t", msg: "b" });
  assert.deepEqual(pubs, ["a", "b"]);
  assert.equal(client.sessionId, "s2");
  client.close();
});

test("tells made while disconnected are written after the welcome, in order", async () => {
  const { server, client, conn } = await open();
  conn.drop();
  const sent = [client.service("log").tell("one"), client.service("log").tell("two")];
  const conn2 = await waitFor(() => server.connections.length === 2 && server.last());
  assert.equal(conn2.sentOf("tell").length, 0);
  conn2.welcome("s1", true);
  await Promise.all(sent);
  assert.deepEqual(conn2.sentOf("tell").map((f) => f.msg), ["one", "two"]);
  client.close();
});

test("back-pressure, policy wait: sends hold while the buffer is above the high-water mark", async () => {
  const { client, conn } = await open({ highWaterMark: 100 });
  conn.bufferedAmount = 500;
  let done = false;
  const sent = client.service("s").tell("x").then(() => (done = true));
  await new Promise((r) => setTimeout(r, 30)); // time passing is what is tested: nothing is written meanwhile
  assert.equal(done, false);
  assert.equal(conn.sentOf("tell").length, 0);
  conn.bufferedAmount = 0;
  await sent;
  assert.equal(conn.sentOf("tell").length, 1);
  client.close();
});

test("back-pressure, policy wait: a send that cannot drain in time rejects with backpressure", async () => {
  const { client, conn } = await open({ highWaterMark: 100, sendTimeoutMs: 20 });
  conn.bufferedAmount = 500;
  await assert.rejects(client.service("s").tell("x"), (e) => e.code === "backpressure");
  client.close();
});

test("back-pressure, policy reject: a send above the high-water mark rejects at once", async () => {
  const { client, conn } = await open({ highWaterMark: 100, backpressure: "reject" });
  conn.bufferedAmount = 500;
  await assert.rejects(client.service("s").tell("x"), (e) => e.code === "backpressure");
  await assert.rejects(client.service("s").ask("x"), (e) => e.code === "backpressure");
  conn.bufferedAmount = 0;
  await client.service("s").tell("y");
  client.close();
});

test("the queue of sends waiting for a connection is bounded", async () => {
  const { client, conn } = await open({ maxQueued: 2 });
  conn.drop();
  const first = [client.service("s").tell(1), client.service("s").tell(2)];
  await assert.rejects(client.service("s").tell(3), (e) => e.code === "queue_full");
  client.close();
  for (const p of first) await assert.rejects(p, (e) => e.code === "closed");
});

test("a connection that answers no ping is dropped and replaced", async () => {
  const { server, client } = await open({ heartbeatMs: 10, maxMissedPongs: 2 });
  const ev = await nextEvent(client, "reconnecting");
  assert.equal(ev.code, 4408);
  assert.equal(server.connections[0].sentOf("ping").length, 2);
  assert.deepEqual(server.connections[0].closed, { final: false });
  client.close();
});

test("a refused connection (4401) ends connect with refused, without retrying", async () => {
  const server = fakeServer();
  const pending = connect("http://gw.test", { connectionFactory: server.factory, ...fast });
  server.last().drop(4401, "bad token");
  await assert.rejects(pending, (e) => e.code === "refused");
  assert.equal(server.connections.length, 1);
});

test("a WebSocket that never opens falls back to long-poll at once (transport auto)", async () => {
  const server = fakeServer();
  const pending = connect("http://gw.test", { connectionFactory: server.factory, encoding: "msgpack" });
  server.last().drop(1006, "blocked", false);
  const lp = server.last();
  assert.equal(lp.target.kind, "longpoll");
  assert.equal(lp.target.encoding, "json");
  lp.welcome();
  const client = await pending;
  assert.equal(client.transport, "longpoll");
  client.close();
});

test("close ends the session for good and rejects what is pending", async () => {
  const { client, conn } = await open();
  const answer = client.service("s").ask("x");
  const closed = nextEvent(client, "close");
  client.close();
  await assert.rejects(answer, (e) => e.code === "closed");
  assert.equal((await closed).code, 1000);
  assert.deepEqual(conn.closed, { final: true });
  await assert.rejects(client.service("s").tell("y"), (e) => e.code === "closed");
});

test("with reconnect off, a drop closes the client", async () => {
  const { client, conn } = await open({ reconnect: false });
  const closed = nextEvent(client, "close");
  conn.drop(1001, "server shutting down");
  assert.equal((await closed).error.code, "closed");
  assert.equal(client.state, "closed");
});

test("connect gives up after connectTimeoutMs without a welcome", async () => {
  const server = fakeServer();
  await assert.rejects(connect("http://gw.test", { connectionFactory: server.factory, connectTimeoutMs: 20 }), (e) => e.code === "timeout");
});

test("a resume the gateway refuses (4400 before the welcome) is followed by a fresh session", async () => {
  const { server, client, conn } = await open();
  client.subscribe("t", () => {});
  conn.deliver({ t: "pub", seq: 1, topic: "t", msg: 1 });
  conn.drop();
  const conn2 = await waitFor(() => server.connections.length === 2 && server.last());
  assert.equal(conn2.hello.resume, "s1");
  conn2.drop(4400, "session cannot be resumed");
  const conn3 = await waitFor(() => server.connections.length === 3 && server.last());
  assert.deepEqual(conn3.hello, { t: "hello", v: 1 });
  conn3.welcome("s2", false);
  assert.deepEqual(conn3.sentOf("sub"), [{ t: "sub", topic: "t" }]);
  assert.equal(client.sessionId, "s2");
  client.close();
});

test("a 4400 on the first hello is a refusal", async () => {
  const server = fakeServer();
  const pending = connect("http://gw.test", { connectionFactory: server.factory, ...fast });
  server.last().drop(4400, "bad hello");
  await assert.rejects(pending, (e) => e.code === "refused");
});

test("once a WebSocket has opened, a failed attempt is an outage: the client stays on WebSocket", async () => {
  const { server, client, conn } = await open();
  conn.drop(1006, "gone", true);
  const conn2 = await waitFor(() => server.connections.length === 2 && server.last());
  conn2.drop(1006, "unreachable", false);
  const conn3 = await waitFor(() => server.connections.length === 3 && server.last());
  assert.equal(conn3.target.kind, "websocket");
  client.close();
});

test("a session the server ended (1000, 1001, 4429) is not resumed: the next hello opens a new one", async () => {
  for (const code of [1000, 1001, 4429]) {
    const { server, client, conn } = await open();
    conn.drop(code, "ended");
    const conn2 = await waitFor(() => server.connections.length === 2 && server.last());
    assert.deepEqual(conn2.hello, { t: "hello", v: 1 }, `after ${code}`);
    client.close();
  }
});

test("4409 (another connection resumed the session) ends this client", async () => {
  const { server, client, conn } = await open();
  const closed = nextEvent(client, "close");
  conn.drop(4409, "resumed elsewhere");
  assert.equal((await closed).error.code, "refused");
  assert.equal(server.connections.length, 1);
});
