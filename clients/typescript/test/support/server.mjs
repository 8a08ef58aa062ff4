// Starts the web_counter example (examples/web_counter.rs): the real volley
// gateway serving a counter service, topic "counter" and the example page.
//
// VOLLEY_WEB_COUNTER names a prebuilt binary (ci.sh builds it); without it
// the example is run with `cargo run -p volley-examples --example web_counter`.
import { spawn } from "node:child_process";
import { dirname, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");

const STARTUP_MS = 10 * 60 * 1000; // a cold `cargo run` compiles first

export async function startCounterServer(extraArgs = []) {
  const bin = process.env.VOLLEY_WEB_COUNTER;
  const args = ["--port", "0", ...extraArgs];
  const [cmd, argv] = bin
    ? [bin, args]
    : ["cargo", ["run", "-q", "-p", "volley-examples", "--example", "web_counter", "--", ...args]];
  const child = spawn(cmd, argv, { cwd: repoRoot, stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  const port = await new Promise((resolvePort, reject) => {
    const timer = setTimeout(() => reject(new Error("web_counter printed no LISTENING line in time")), STARTUP_MS);
    const lines = createInterface({ input: child.stdout });
    lines.on("line", (line) => {
      const m = /^LISTENING (\d+)/.exec(line.trim());
      if (m) {
        clearTimeout(timer);
        resolvePort(Number(m[1]));
      }
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`web_counter exited before listening (code ${code}, signal ${signal})`));
    });
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    port,
    url,
    /** Sends a signal to the server (SIGSTOP freezes it: a dead peer that closes nothing). */
    signal(sig) {
      child.kill(sig);
    },
    async stop() {
      child.kill("SIGCONT");
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}
