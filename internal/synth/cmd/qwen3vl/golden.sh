#!/bin/sh
# golden.sh re-makes smolgo's Qwen3-VL references from llama.cpp's mtmd:
# vision/testdata/qwen3vl-embed-tiny.json.gz (the image embedding rows,
# llamaref mtmd-embed) and models/testdata/qwen3vl-logits-tiny.json.gz (the
# text model's logits with the image in the prompt, llamaref mtmd-logits),
# for golden-vision's three images, on the tiny pair this command writes
# (synth.Qwen3VLTextTiny, synth.Qwen3VLMmprojTiny). Each run is made with
# the CPU variants haswell (stored) and sandybridge; their worst difference
# is stored as "selfcheck", from which the tests take their tolerance
# (golden-vision's rule: twice it, rounded up to one significant digit).
#
#   sh internal/synth/cmd/qwen3vl/golden.sh   # from the repository root
#
# Needs llamaref with libmtmd (../shared/tools/llamaref/build.sh with
# LLAMAREF_MTMD=1; SMOLGO_LLAMAREF: its path, as the tests take it) and
# ../shared/golden-vision/images (GOLDEN_VISION: the golden-vision
# directory).
set -eu
LLAMAREF=${SMOLGO_LLAMAREF:-${SMOLGO_CACHE:-$HOME/.cache/smolgo}/llamaref/nlc-3.22.1/bin/llamaref}
GV=${GOLDEN_VISION:-$(cd "$(dirname "$0")/../../../.." && pwd)/../shared/golden-vision}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go run ./internal/synth/cmd/qwen3vl "$tmp"
prompt='Q: <__media__> A:'
for img in gradient-64x64.png checker-96x48.ppm noise-37x53.png; do
	s=${img%%.*}
	for v in haswell sandybridge; do
		"$LLAMAREF" mtmd-embed --mmproj "$tmp/mmproj-qwen3vl-F32.gguf" --model "$tmp/qwen3vl-text-F32.gguf" \
			--image "$GV/images/$img" --digits 6 --cpu-variant $v --out "$tmp/embed-$s-$v.json" 2>/dev/null
		"$LLAMAREF" mtmd-logits --mmproj "$tmp/mmproj-qwen3vl-F32.gguf" --model "$tmp/qwen3vl-text-F32.gguf" \
			--image "$GV/images/$img" --prompt "$prompt" --decode 8 --digits 6 --cpu-variant $v --out "$tmp/logits-$s-$v.json" 2>/dev/null
	done
done
python3 - "$tmp" "$prompt" <<'PY'
import gzip, hashlib, json, math, sys
tmp, prompt = sys.argv[1], sys.argv[2]
images = ["gradient-64x64.png", "checker-96x48.ppm", "noise-37x53.png"]
def sha(name):
    return hashlib.sha256(open(f"{tmp}/{name}", "rb").read()).hexdigest()
def diff(a, b, acc):
    for x, y in zip(a, b):
        d = abs(x - y)
        acc[0] = max(acc[0], d); acc[1] += d * d; acc[2] += 1
def load(kind, s, v):
    return json.load(open(f"{tmp}/{kind}-{s}-{v}.json"))
head = {"llama_cpp": None, "cpu_variant": "haswell", "digits": 6,
        "text_sha256": sha("qwen3vl-text-F32.gguf"), "mmproj_sha256": sha("mmproj-qwen3vl-F32.gguf")}
embed, logits = [], []
ea, la = [0.0, 0.0, 0], [0.0, 0.0, 0]
for img in images:
    s = img.split(".")[0]
    e, e2 = load("embed", s, "haswell"), load("embed", s, "sandybridge")
    head["llama_cpp"] = e["version"]
    chunks = []
    for c, c2 in zip(e["chunks"], e2["chunks"]):
        if c["type"] == "image":
            for r, r2 in zip(c["embeddings"], c2["embeddings"]):
                diff(r, r2, ea)
            c = {k: c[k] for k in ("type", "n_tokens", "n_pos", "grid", "tile_px", "embeddings")}
        chunks.append(c)
    embed.append({"image": img, "n_embd": e["n_embd"], "chunks": chunks})
    g, g2 = load("logits", s, "haswell"), load("logits", s, "sandybridge")
    for a, b in zip(g["prefill"] + g["decode"], g2["prefill"] + g2["decode"]):
        diff(a["logits"], b["logits"], la)
    logits.append({"image": img, "prompt": prompt, "tokens": g["tokens"], "chunks": g["chunks"],
                   "prefill": [r["logits"] for r in g["prefill"]],
                   "decode": [{"token": r["token"], "argmax": r["argmax"], "logits": r["logits"]} for r in g["decode"]],
                   "prefill_argmax": [r["argmax"] for r in g["prefill"]]})
sc = lambda a: [a[0], math.sqrt(a[1] / a[2])]
for path, key, runs, acc in (("vision/testdata/qwen3vl-embed-tiny.json.gz", "embed", embed, ea),
                             ("models/testdata/qwen3vl-logits-tiny.json.gz", "logits", logits, la)):
    doc = dict(head, schema="smolgo-qwen3vl-" + key + "/1", selfcheck=sc(acc), runs=runs)
    with gzip.GzipFile(path, "wb", compresslevel=9, mtime=0) as f:
        f.write(json.dumps(doc, separators=(",", ":")).encode())
    print(path, "selfcheck max %.3g rms %.3g" % tuple(sc(acc)))
PY
