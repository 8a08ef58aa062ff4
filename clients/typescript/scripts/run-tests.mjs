// Runs `node --test` on the given files or folders. Node 22 and later have
// a global WebSocket; Node 20 needs --experimental-websocket, added here so
// that the same command works on both.
import { spawnSync } from "node:child_process";

const major = Number(process.versions.node.split(".")[0]);
const flags = major < 22 ? ["--experimental-websocket"] : [];
// A hung test fails after three minutes instead of holding CI.
const timeout = ["--test-timeout=180000"];
const result = spawnSync(process.execPath, [...flags, "--test", ...timeout, ...process.argv.slice(2)], { stdio: "inherit" });
process.exit(result.status ?? 1);
