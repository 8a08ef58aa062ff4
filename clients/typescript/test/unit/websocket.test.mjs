// The WebSocket transport against a fake WebSocket class.
import assert from "node:assert/strict";
import { test } from "node:test";

import { connect, decodeMsgpack, encodeMsgpack } from "../../dist/index.js";
import { waitFor } from "../support/fake.mjs";

function fakeWebSocketClass() {
  const sockets = [];
  class FakeWebSocket {
    constructor(url) {
      this.url = url;
      this.binaryType = "blob";
      this.bufferedAmount = 0;
      this.sent = [];
      this.closedWith = null;
      sockets.push(this);
      queueMicrotask(() => this.onopen?.({}));
    }
    send(data) {
      this.sent.push(data);
    }
    close(code, reason) {
      this.closedWith = { code, reason };
    }
    serverSends(data) {
      this.onmessage?.({ data });
    }
    serverCloses(code, reason = "") {
      this.onclose?.({ code, reason });
    }
  }
  return { FakeWebSocket, sockets };
}

test("websocket, json: the URL names the encoding, frames are text, the final close is 1000", async () => {
  const { FakeWebSocket, sockets } = fakeWebSocketClass();
  const pending = connect("https://gw.test/app/", { WebSocket: FakeWebSocket });
  const ws = await waitFor(() => sockets[0]?.sent.length && sockets[0]);
  assert.equal(ws.url, "wss://gw.test/app/ws?enc=json");
  assert.deepEqual(JSON.parse(ws.sent[0]), { t: "hello", v: 1 });
  ws.serverSends(JSON.stringify({ t: "welcome", v: 1, session: "w1", resumed: false, heartbeat_ms: 15000, max_frame: 65536 }));
  const client = await pending;
  const answer = client.service("counter").ask("get");
  const ask = await waitFor(() => ws.sent[1] && JSON.parse(ws.sent[1]));
  ws.serverSends(JSON.stringify({ t: "reply", seq: 1, id: ask.id, msg: 3 }));
  assert.equal(await answer, 3);
  client.close();
  assert.equal(ws.closedWith.code, 1000);
});

test("websocket, msgpack: binary frames both ways", async () => {
  const { FakeWebSocket, sockets } = fakeWebSocketClass();
  const pending = connect("http://gw.test", { WebSocket: FakeWebSocket, encoding: "msgpack" });
  const ws = await waitFor(() => sockets[0]?.sent.length && sockets[0]);
  assert.equal(ws.url, "ws://gw.test/ws?enc=msgpack");
  assert.equal(ws.binaryType, "arraybuffer");
  assert.deepEqual(decodeMsgpack(ws.sent[0]), { t: "hello", v: 1 });
  const bytes = (v) => encodeMsgpack(v).buffer;
  ws.serverSends(bytes({ t: "welcome", v: 1, session: "m1", resumed: false, heartbeat_ms: 15000, max_frame: 65536 }));
  const client = await pending;
  const answer = client.service("counter").ask({ add: 2 });
  const ask = await waitFor(() => ws.sent[1] && decodeMsgpack(ws.sent[1]));
  assert.deepEqual(ask.msg, { add: 2 });
  ws.serverSends(bytes({ t: "reply", seq: 1, id: ask.id, msg: 5 }));
  assert.equal(await answer, 5);
  client.close();
});

test("websocket: a frame the client cannot read closes with 4400 and the client reconnects", async () => {
  const { FakeWebSocket, sockets } = fakeWebSocketClass();
  const pending = connect("http://gw.test", { WebSocket: FakeWebSocket, reconnect: { initialDelayMs: 1, maxDelayMs: 2 } });
  const ws = await waitFor(() => sockets[0]?.sent.length && sockets[0]);
  ws.serverSends(JSON.stringify({ t: "welcome", v: 1, session: "w1", resumed: false }));
  const client = await pending;
  ws.serverSends("{not json");
  assert.equal(ws.closedWith.code, 4400);
  const ws2 = await waitFor(() => sockets[1]?.sent.length && sockets[1]);
  assert.deepEqual(JSON.parse(ws2.sent[0]), { t: "hello", v: 1, resume: "w1", last_seq: 0 });
  client.close();
});

test("websocket: a drop closes the old socket with a non-final code", async () => {
  const { FakeWebSocket, sockets } = fakeWebSocketClass();
  const pending = connect("http://gw.test", { WebSocket: FakeWebSocket, heartbeatMs: 5, maxMissedPongs: 1 });
  const ws = await waitFor(() => sockets[0]?.sent.length && sockets[0]);
  ws.serverSends(JSON.stringify({ t: "welcome", v: 1, session: "w1", resumed: false }));
  const client = await pending;
  await waitFor(() => ws.closedWith, 5000, "the dead socket closed");
  assert.notEqual(ws.closedWith.code, 1000);
  client.close();
});

test("websocket: a frame over the server's max_frame is refused with too_large and never sent", async () => {
  const { FakeWebSocket, sockets } = fakeWebSocketClass();
  const pending = connect("http://gw.test", { WebSocket: FakeWebSocket });
  const ws = await waitFor(() => sockets[0]?.sent.length && sockets[0]);
  ws.serverSends(JSON.stringify({ t: "welcome", v: 1, session: "w1", resumed: false, heartbeat_ms: 15000, max_frame: 200 }));
  const client = await pending;
  await assert.rejects(client.service("counter").ask("é".repeat(150)), (e) => e.code === "too_large");
  await assert.rejects(client.service("counter").tell("x".repeat(300)), (e) => e.code === "too_large");
  assert.equal(ws.sent.length, 1);
  await client.service("counter").tell("small");
  assert.equal(ws.sent.length, 2);
  assert.equal(client.state, "open");
  client.close();
});
