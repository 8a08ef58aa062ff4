// The shared counter page: asks the `counter` service, shows the values
// published on topic `counter`, and lists the pushes to this tab's inbox.
// The client is the built @volley/client (clients/typescript, `npm run build`
// copies it to ./client/).

import { connect } from "./client/index.js";

const params = new URLSearchParams(location.search);
const valueEl = document.getElementById("value");
const statusEl = document.getElementById("status");
const logEl = document.getElementById("log");
const buttons = [...document.querySelectorAll("button[data-add]")];

// What the page has seen, read by the browser test (clients/typescript/test/browser).
const seen = { values: [], answers: [], published: [], pushes: [], opens: [], reconnects: 0, state: "connecting" };
window.counterPage = seen;

function log(text) {
  const li = document.createElement("li");
  li.textContent = `${new Date().toLocaleTimeString()}  ${text}`;
  logEl.prepend(li);
  while (logEl.children.length > 50) logEl.lastChild.remove();
}

function show(value) {
  seen.values.push(value);
  valueEl.textContent = String(value);
}

function setStatus(state, text) {
  seen.state = state;
  statusEl.className = `status ${state === "open" ? "open" : "down"}`;
  statusEl.textContent = text;
  for (const b of buttons) b.disabled = state === "closed";
}

const client = await connect(location.origin, {
  transport: params.get("transport") ?? "auto",
  encoding: params.get("enc") ?? "json",
  reconnect: { initialDelayMs: 100, maxDelayMs: 2000 },
});
seen.client = client;
const counter = client.service("counter");

client.on("open", (e) => {
  seen.opens.push(e);
  setStatus("open", `connected (${e.transport}, session ${e.session.slice(0, 8)}${e.resumed ? ", resumed" : ""})`);
  log(e.resumed ? "session resumed" : "connected");
});
client.on("reconnecting", (e) => {
  seen.reconnects++;
  setStatus("reconnecting", `connection lost (${e.code}), reconnecting…`);
  log(`connection lost (${e.code}); retrying in ${Math.round(e.delayMs)} ms`);
});
client.on("close", (e) => setStatus("closed", `closed: ${e.reason}`));

client.subscribe("counter", (msg) => {
  seen.published.push(msg);
  show(typeof msg === "object" && msg !== null && "value" in msg ? msg.value : msg);
  log(`counter is now ${valueEl.textContent}`);
});
client.actor((msg) => {
  seen.pushes.push(msg);
  log(`push to inbox: ${typeof msg === "object" && msg !== null && "note" in msg ? msg.note : JSON.stringify(msg)}`);
});

for (const b of buttons) {
  b.addEventListener("click", async () => {
    try {
      const value = await counter.ask({ add: Number(b.dataset.add) });
      seen.answers.push(value);
      show(value);
    } catch (e) {
      log(`add failed: ${e.message}`);
    }
  });
}

let pushes = 0;
document.getElementById("push").addEventListener("click", () =>
  counter.ask({ push: { note: `hello from the server (${++pushes})` } }).catch((e) => log(`push failed: ${e.message}`)),
);
document.getElementById("drop").addEventListener("click", () =>
  counter.ask("drop").catch((e) => log(`drop failed: ${e.message}`)),
);

setStatus("open", `connected (${client.transport}, session ${client.sessionId.slice(0, 8)})`);
show(await counter.ask("get"));
