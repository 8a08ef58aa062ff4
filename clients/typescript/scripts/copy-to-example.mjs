// Copies the built client (dist/*.js) next to the web_counter example's page,
// which imports it as ./client/index.js.
import { cpSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const from = join(root, "dist");
const to = join(root, "..", "..", "examples", "web_counter", "client");
rmSync(to, { recursive: true, force: true });
mkdirSync(to, { recursive: true });
for (const name of readdirSync(from)) {
  if (name.endsWith(".js") || name.endsWith(".js.map")) cpSync(join(from, name), join(to, name));
}
