// Debian's chromium, headless, driven by playwright-core (which downloads no
// browser of its own). CHROMIUM overrides the path.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { chromium } from "playwright-core";

export const chromiumPath = process.env.CHROMIUM ?? "/usr/bin/chromium";

export async function launchBrowser() {
  const profile = mkdtempSync(join(tmpdir(), "volley-chromium-"));
  // A persistent context on a fresh profile directory: playwright passes it
  // as --user-data-dir.
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  return {
    context,
    newPage: () => context.newPage(),
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
