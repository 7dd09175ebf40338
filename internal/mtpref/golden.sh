#!/usr/bin/env bash
# Rebuilds models/qwen35/testdata/{qwen35,qwen35moe}-mtp-tiny.json.gz, the references of
# models/qwen35 TestMTPLogitsMatchLlamaCpp: llama.cpp's MTP head (mtpref) on
#   qwen35:    golden-next's qwen35-tiny-F32.gguf (../shared/golden-next) with the block
#              `go run ./internal/synth/cmd/addmtp -seed 1` adds;
#   qwen35moe: `llamaref synth --arch qwen35moe --seed 34 ...` (the arguments below, as the test's
#              tinyMTPFile writes it) with the same block added;
# over golden-next's prompts rand12, the first 40 tokens of rand100 (rand40) and single
# (Python's random.Random(4242), as llamaref's golden_next.py draws them), four recursive drafts each,
# on llama.cpp's haswell CPU backend, one thread. "selfcheck" is llama.cpp's spread with itself, a
# rerun on the sandybridge backend: per prompt, max |diff| and RMS over every logit of its prefill
# rows and drafts; the largest of each over the prompts.
#
#   internal/mtpref/golden.sh [OUT_DIR]    (default: models/qwen35/testdata; run from anywhere)
#
# Needs llamaref built (../shared/tools/llamaref/build.sh), Go, python3 (standard library only).
# Work files go to ${SMOLGO_CACHE:-$HOME/.cache/smolgo}/mtpref-work, never into the tree.
# Environment: SMOLGO_SHARED (default: ../shared beside the repository), SMOLGO_CACHE.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
shared="${SMOLGO_SHARED:-$repo/../shared}"
cache="${SMOLGO_CACHE:-$HOME/.cache/smolgo}"
out="${1:-$repo/models/qwen35/testdata}"
work="$cache/mtpref-work"
llamaref="$cache/llamaref/nlc-${NLC_VERSION:-3.22.1}/bin/llamaref"
log() { echo "mtpref/golden.sh: $*" >&2; }

mtpref="$("$here/build.sh")"
[[ -x "$llamaref" ]] || { log "no llamaref at $llamaref: run $shared/tools/llamaref/build.sh"; exit 1; }
src35="$shared/golden-next/models/qwen35-tiny-F32.gguf"
[[ -f "$src35" ]] || { log "no $src35 (set SMOLGO_SHARED)"; exit 1; }
mkdir -p "$work" "$out"

log "adding the MTP blocks"
"$llamaref" synth --out "$work/qwen35moe-tiny-F32.gguf" --arch qwen35moe --seed 34 --n-layer 4 --n-embd 256 \
  --n-head 8 --n-head-kv 2 --ssm-heads 4 --ssm-groups 2 --n-expert 4 --n-expert-used 2 --n-ff-exp 128 >&2
(cd "$repo" && go run ./internal/synth/cmd/addmtp -seed 1 "$src35" "$work/qwen35-mtp-F32.gguf" &&
               go run ./internal/synth/cmd/addmtp -seed 1 "$work/qwen35moe-tiny-F32.gguf" "$work/qwen35moe-mtp-F32.gguf")

prompts=()
while read -r p; do prompts+=(--prompt "$p"); done < <(python3 -c '
import random
r = random.Random(4242)
rand12 = [r.randrange(337) for _ in range(12)]
rand100 = [r.randrange(337) for _ in range(100)]
single = [r.randrange(337)]
for name, toks in (("rand12", rand12), ("rand40", rand100[:40]), ("single", single)):
    print(name + "=" + ",".join(map(str, toks)))')

for arch in qwen35 qwen35moe; do
  model="$work/$arch-mtp-F32.gguf"
  log "$arch: llama.cpp's MTP head (haswell, then sandybridge)"
  "$mtpref" --model "$model" "${prompts[@]}" --drafts 4 --threads 1 --cpu-variant haswell > "$work/$arch-haswell.json"
  "$mtpref" --model "$model" "${prompts[@]}" --drafts 4 --threads 1 --cpu-variant sandybridge > "$work/$arch-sandybridge.json"
  python3 - "$arch" "$model" "$work/$arch-haswell.json" "$work/$arch-sandybridge.json" "$out/$arch-mtp-tiny.json.gz" <<'PY'
import gzip, hashlib, json, math, sys
arch, model, ref_path, other_path, out = sys.argv[1:]
ref, other = json.load(open(ref_path)), json.load(open(other_path))
mx = rms = 0.0
for p, q in zip(ref["prompts"], other["prompts"], strict=True):
    pm, ss, n = 0.0, 0.0, 0
    for a, b in zip(p["prefill"] + [d["logits"] for d in p["drafts"]],
                    q["prefill"] + [d["logits"] for d in q["drafts"]], strict=True):
        for x, y in zip(a, b, strict=True):
            d = abs(x - y)
            pm, ss, n = max(pm, d), ss + d * d, n + 1
    mx, rms = max(mx, pm), max(rms, math.sqrt(ss / n))
sha = hashlib.sha256(open(model, "rb").read()).hexdigest()
doc = {"schema": "smolgo-mtp-logits/1", "model": f"{arch}-tiny F32 + addmtp -seed 1", "model_sha256": sha,
       "cpu_backend": ref["cpu_backend"], "command": "internal/mtpref/golden.sh",
       "prompts": [{k: p[k] for k in ("name", "tokens", "target_next", "prefill", "drafts")} for p in ref["prompts"]],
       "selfcheck": {"max_abs": mx, "rms": rms}}
with open(out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as f:
    f.write(json.dumps(doc, separators=(",", ":")).encode())
print(f"mtpref/golden.sh: wrote {out} (selfcheck max {mx:.3g}, RMS {rms:.3g})", file=sys.stderr)
PY
done
