// The client in a real browser: Debian's chromium, headless, on the
// web_counter example's page, served by the real gateway. Two tabs share
// the counter; a third uses long-poll, a fourth MessagePack.
//
// The screenshot goes to docs/images/web_counter.png when
// VOLLEY_SCREENSHOT=1 (to refresh the docs' picture), else to a temporary
// file, so that a test run leaves the work tree as it was.
import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { chromiumPath, launchBrowser } from "../support/browser.mjs";
import { repoRoot, startCounterServer } from "../support/server.mjs";

const skip = !existsSync(chromiumPath) && !process.env.CI ? `no browser at ${chromiumPath} (apt-get install chromium)` : false;

let server;
let browser;
before(async () => {
  if (skip) return;
  server = await startCounterServer();
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

async function openTab(query = "") {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e));
  await page.goto(`${server.url}/${query}`);
  await page.waitForFunction(() => window.counterPage?.state === "open" && window.counterPage.values.length > 0, null, { timeout: 15000 });
  page.errors = errors;
  return page;
}

const seen = (page) => page.evaluate(() => ({ ...window.counterPage, client: undefined }));

test("two tabs share the counter live: ask, topic, push, and a reconnect after the server drops the socket", { skip }, async () => {
  const a = await openTab();
  const b = await openTab();
  const lp = await openTab("?transport=longpoll");
  assert.equal(await lp.evaluate(() => window.counterPage.client.transport), "longpoll");
  const packed = await openTab("?enc=msgpack");

  // Ask: tab A adds 10 and gets the new value as its answer.
  const start = (await seen(a)).values.at(-1);
  await a.click("button[data-add='10']");
  await a.waitForFunction((v) => window.counterPage.answers.includes(v), start + 10);
  // Topic: tab B and the long-poll tab see it published, and show it.
  for (const tab of [b, lp, packed]) {
    await tab.waitForFunction((v) => window.counterPage.published.includes(v), start + 10);
  }
  assert.equal(await b.textContent("#value"), String(start + 10));

  // Push: the counter pushes to tab A's inbox actor.
  await a.click("#push");
  await a.waitForFunction(() => window.counterPage.pushes.length === 1);
  assert.match((await seen(a)).pushes[0].note, /hello from the server/);
  assert.equal((await seen(b)).pushes.length, 0);

  // Reconnect: the server drops tab A's socket (1012); the client resumes
  // the session, and tab A goes on seeing tab B's changes.
  const session = await a.evaluate(() => window.counterPage.client.sessionId);
  await a.click("#drop");
  await a.waitForFunction(() => window.counterPage.opens.some((o) => o.resumed) && window.counterPage.state === "open", null, { timeout: 15000 });
  assert.equal(await a.evaluate(() => window.counterPage.client.sessionId), session);
  assert.ok((await seen(a)).reconnects >= 1);
  await b.click("button[data-add='1']");
  await a.waitForFunction((v) => window.counterPage.published.includes(v), start + 11);
  assert.equal(await a.textContent("#value"), String(start + 11));

  await b.click("button[data-add='1']");
  await a.waitForFunction((v) => window.counterPage.published.includes(v), start + 12);
  const shot = process.env.VOLLEY_SCREENSHOT ? join(repoRoot, "docs", "images", "web_counter.png") : join(tmpdir(), "web_counter.png");
  mkdirSync(join(shot, ".."), { recursive: true });
  await a.setViewportSize({ width: 760, height: 600 });
  await a.screenshot({ path: shot, fullPage: true });

  for (const tab of [a, b, lp, packed]) assert.deepEqual(tab.errors, []);
});
