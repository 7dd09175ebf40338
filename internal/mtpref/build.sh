#!/usr/bin/env bash
# Builds mtpref (mtpref.c: llama.cpp's MTP head as reference logits) with gcc against the headers of
# the llama.cpp source and the prebuilt libraries that llamaref's build.sh puts in the cache
# (/work/shared/tools/llamaref/build.sh, or wherever your checkout of it is: run it first; this
# script installs nothing). The binary goes into that cache, next to llamaref, never into the tree.
#
# Idempotent: a second run with nothing changed only prints the binary path.
# Output (stdout): the absolute path of the mtpref binary. Logs go to stderr.
#
# Environment:
#   SMOLGO_CACHE   cache root (default: $HOME/.cache/smolgo)
#   NLC_VERSION    node-llama-cpp version (default 3.22.1)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${SMOLGO_CACHE:-$HOME/.cache/smolgo}"
nlc_version="${NLC_VERSION:-3.22.1}"
root="$cache/llamaref/nlc-$nlc_version"
src_dir="$root/llama.cpp"
bin_dir="$root/bin"
bin="$bin_dir/mtpref"
nlc_pkg="$root/npm/node_modules/node-llama-cpp"
lib_dir="$root/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"

log() { echo "mtpref/build.sh: $*" >&2; }

[[ -f "$src_dir/include/llama.h" ]] || { log "no llama.cpp headers in $src_dir: run llamaref's build.sh first"; exit 1; }
libllama="$(cd "$lib_dir" 2>/dev/null && ls libllama.v*.so 2>/dev/null | head -n1 || true)"
libggml="$(cd "$lib_dir" 2>/dev/null && ls libggml.v*.so 2>/dev/null | head -n1 || true)"
[[ -n "$libllama" && -n "$libggml" && -f "$lib_dir/libggml-base.so" ]] || { log "no llama.cpp libraries in $lib_dir: run llamaref's build.sh first"; exit 1; }
release="$(sed -n 's/.*"release"[^"]*"\([^"]*\)".*/\1/p' "$nlc_pkg/llama/binariesGithubRelease.json" 2>/dev/null | head -n1 || true)"
release="${release:-unknown}"

cflags=(-O2 -g -std=gnu11 -Wall -Wextra -Wno-unused-parameter -ffp-contract=off
        -DLLAMA_RELEASE="\"$release\""
        -I"$src_dir/include" -I"$src_dir/ggml/include")
ldflags=(-L"$lib_dir" -l:"$libllama" -l:"$libggml" -l:libggml-base.so -lm -ldl -Wl,-rpath,"$lib_dir")
stamp="$(
  { cat "$here/mtpref.c"; echo "${cflags[*]} ${ldflags[*]}"; ls -l --time-style=+%s "$lib_dir/$libllama"; } | sha256sum | cut -d' ' -f1
)"
if [[ -x "$bin" && -f "$bin.stamp" && "$(cat "$bin.stamp")" == "$stamp" ]]; then
  echo "$bin"
  exit 0
fi
command -v gcc >/dev/null || { log "gcc not found (apt-get install gcc)"; exit 1; }
mkdir -p "$bin_dir"
log "compiling $bin"
gcc "${cflags[@]}" -o "$bin.tmp" "$here/mtpref.c" "${ldflags[@]}" >&2
mv "$bin.tmp" "$bin"
echo "$stamp" > "$bin.stamp"
echo "$bin"
