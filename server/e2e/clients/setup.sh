#!/usr/bin/env bash
# Installs the real clients of the server's opt-in end-to-end test
# (server/clients_test.go, run with SMOLGO_CLIENTS=1): Codex CLI, Claude Code
# and the agent SDKs, at the versions pinned in package-lock.json, with the
# machine's Node (20 or later). About 1 GB in node_modules. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")"
command -v node >/dev/null || { echo "setup.sh: needs node and npm (see ../setup.sh)" >&2; exit 1; }
if [ ! -d node_modules/@openai/codex ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup.sh: npm ci in $(pwd)"
  npm ci --no-audit --no-fund --loglevel=error
fi
echo "setup.sh: node $(node --version), codex $(node_modules/.bin/codex --version), claude $(node_modules/.bin/claude --version)"
