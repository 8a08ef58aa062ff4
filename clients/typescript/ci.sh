#!/usr/bin/env bash
# The TypeScript client's CI (called by .ci/run after the Rust tests):
# install, build, the unit tests, the tests against the real gateway (the
# web_counter example) and the headless-browser test.
set -euo pipefail
cd "$(dirname "$0")"

# .ci/run installs the packages earlier, in the background.
if [ -z "${VOLLEY_NPM_READY:-}" ]; then
  npm ci --no-audit --no-fund
fi
npm run build

# The server the tests talk to, built once (a no-op after `cargo test
# --workspace`, which builds the examples).
# The gateway example the server and browser tests start; a caller that
# built it already (the repository's CI) passes its path.
if [ -z "${VOLLEY_WEB_COUNTER:-}" ]; then
  cargo build -q -p volley-examples --example web_counter
  target_dir="$(cargo metadata --format-version 1 --no-deps |
    node -p 'JSON.parse(require("fs").readFileSync(0, "utf8")).target_directory')"
  export VOLLEY_WEB_COUNTER="$target_dir/debug/examples/web_counter"
fi

# One node --test run (scripts/run-tests.mjs adds the WebSocket flag on Node 20).
node scripts/run-tests.mjs test/unit/ test/server/ test/browser/
