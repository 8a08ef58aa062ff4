// Runs `node --test` on the given files or folders. Node 22 and later have
// a global WebSocket; Node 20 needs --experimental-websocket, added here so
// that the same command works on both.
import { spawnSync } from "node:child_process";

const major = Number(process.versions.node.split(".")[0]);
const flags = major < 22 ? ["--experimental-websocket"] : [];
const result = spawnSync(process.execPath, [...flags, "--test", ...process.argv.slice(2)], { stdio: "inherit" });
process.exit(result.status ?? 1);
