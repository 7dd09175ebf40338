#!/usr/bin/env bash
# Installs what the server's end-to-end tests need on a fresh Debian machine:
# Node.js and npm (if absent), the npm packages pinned in package-lock.json
# (the official openai client and playwright-core), and Debian's chromium for
# the headless browser test. Safe to run again; needs root for apt-get.
# CI (.ci/run) calls it before `go test ./...`.
set -euo pipefail
cd "$(dirname "$0")"

need_apt=()
command -v node >/dev/null 2>&1 || need_apt+=(nodejs)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup.sh: apt-get install ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" fonts-dejavu-core >/dev/null
fi

if [ ! -f node_modules/openai/package.json ] || [ ! -f node_modules/playwright-core/package.json ] \
   || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup.sh: npm ci in $(pwd)"
  npm ci --no-audit --no-fund --loglevel=error
fi
echo "setup.sh: node $(node --version), chromium $(/usr/bin/chromium --version 2>/dev/null | head -1)"
