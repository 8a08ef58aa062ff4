// The long-poll transport against a fake fetch that plays the gateway.
import assert from "node:assert/strict";
import { test } from "node:test";

import { connect } from "../../dist/index.js";
import { waitFor } from "../support/fake.mjs";

function fakeGateway() {
  const gw = { opens: [], sends: [], recvs: [], closes: [], queue: [], waiting: null, status: 200 };
  const json = (body, status = 200) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
  gw.push = (frame) => {
    gw.queue.push(frame);
    if (gw.waiting) {
      const w = gw.waiting;
      gw.waiting = null;
      w(json(gw.queue.splice(0)));
    }
  };
  gw.fetch = async (url, init) => {
    const u = new URL(url);
    if (u.pathname.endsWith("/lp/open")) {
      gw.opens.push(JSON.parse(init.body));
      if (gw.status !== 200) return new Response("no", { status: gw.status });
      return json({ t: "welcome", v: 1, session: "lp1", resumed: false, heartbeat_ms: 15000 });
    }
    if (u.pathname.endsWith("/lp/send")) {
      gw.sends.push({ session: u.searchParams.get("session"), frames: JSON.parse(init.body) });
      return new Response(null, { status: 204 });
    }
    if (u.pathname.endsWith("/lp/recv")) {
      gw.recvs.push({ session: u.searchParams.get("session"), ack: Number(u.searchParams.get("ack")) });
      if (gw.queue.length) return json(gw.queue.splice(0));
      return new Promise((resolve, reject) => {
        gw.waiting = resolve;
        init.signal.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")));
      });
    }
    if (u.pathname.endsWith("/lp/close")) {
      gw.closes.push(u.searchParams.get("session"));
      return new Response(null, { status: 204 });
    }
    return new Response("not found", { status: 404 });
  };
  return gw;
}

test("long-poll: hello by POST, frames out in batches, frames in by a held GET with the ack", async () => {
  const gw = fakeGateway();
  const client = await connect("http://gw.test/v", { transport: "longpoll", fetch: gw.fetch, token: "tk" });
  assert.deepEqual(gw.opens, [{ t: "hello", v: 1, token: "tk" }]);
  const got = [];
  client.subscribe("counter", (m) => got.push(m));
  const answer = client.service("counter").ask("get");
  const batch = await waitFor(() => gw.sends.find((s) => s.frames.some((f) => f.t === "ask")));
  assert.equal(batch.session, "lp1");
  assert.deepEqual(batch.frames.map((f) => f.t), ["sub", "ask"]);
  gw.push({ t: "pub", seq: 1, topic: "counter", msg: 5 });
  gw.push({ t: "reply", seq: 2, id: batch.frames[1].id, msg: 5 });
  assert.equal(await answer, 5);
  assert.deepEqual(got, [5]);
  await waitFor(() => gw.recvs.some((r) => r.ack === 2), 5000, "a recv acknowledging seq 2");
  client.close();
  assert.deepEqual(gw.closes, ["lp1"]);
});

test("long-poll: an unknown session (404) makes the client open again with resume", async () => {
  const gw = fakeGateway();
  const client = await connect("http://gw.test", { transport: "longpoll", fetch: gw.fetch, reconnect: { initialDelayMs: 1, maxDelayMs: 2 } });
  gw.push({ t: "pub", seq: 1, topic: "x", msg: 1 });
  const waiting = await waitFor(() => gw.waiting);
  gw.waiting = null;
  waiting(new Response("unknown session", { status: 404 }));
  await waitFor(() => gw.opens.length === 2, 5000, "a second open");
  assert.deepEqual(gw.opens[1], { t: "hello", v: 1, resume: "lp1", last_seq: 1 });
  client.close();
});

test("long-poll: 401 at open is a refusal", async () => {
  const gw = fakeGateway();
  gw.status = 401;
  await assert.rejects(connect("http://gw.test", { transport: "longpoll", fetch: gw.fetch }), (e) => e.code === "refused");
});

test("long-poll: a resume refused with 404 at open starts a fresh session", async () => {
  const gw = fakeGateway();
  const client = await connect("http://gw.test", { transport: "longpoll", fetch: (u, i) => gw.fetch(u, i), reconnect: { initialDelayMs: 1, maxDelayMs: 2 } });
  const realFetch = gw.fetch;
  let refused = 0;
  gw.fetch = async (url, init) => {
    if (new URL(url).pathname.endsWith("/lp/open") && JSON.parse(init.body).resume && refused++ === 0) {
      gw.opens.push(JSON.parse(init.body));
      return new Response("no session", { status: 404 });
    }
    return realFetch(url, init);
  };
  const waiting = await waitFor(() => gw.waiting);
  gw.waiting = null;
  waiting(new Response("unknown session", { status: 404 }));
  await waitFor(() => gw.opens.length === 3, 5000, "a third open");
  assert.equal(gw.opens[1].resume, "lp1");
  assert.deepEqual(gw.opens[2], { t: "hello", v: 1 });
  client.close();
});

test("long-poll: sends are split into bodies within max_frame", async () => {
  const gw = fakeGateway();
  const fetchWithLimit = async (url, init) => {
    const r = await gw.fetch(url, init);
    if (new URL(url).pathname.endsWith("/lp/open")) {
      return new Response(JSON.stringify({ t: "welcome", v: 1, session: "lp1", resumed: false, heartbeat_ms: 15000, max_frame: 120 }), { status: 200 });
    }
    return r;
  };
  const client = await connect("http://gw.test", { transport: "longpoll", fetch: fetchWithLimit });
  const tells = Array.from({ length: 4 }, (_, i) => client.service("log").tell(`${i}`.repeat(30)));
  await Promise.all(tells);
  await waitFor(() => gw.sends.flatMap((s) => s.frames).length === 4, 5000, "four frames sent");
  assert.ok(gw.sends.length >= 2);
  for (const s of gw.sends) assert.ok(JSON.stringify(s.frames).length <= 120);
  await assert.rejects(client.service("log").tell("x".repeat(200)), (e) => e.code === "too_large");
  client.close();
});
