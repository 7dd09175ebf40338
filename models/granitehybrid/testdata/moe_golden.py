#!/usr/bin/env python3
"""Writes the golden logits of a tiny Granite 4.0-H mixture of experts, which
../shared/golden-next lacks (its granitehybrid-tiny is dense): llama.cpp's
logits on the file `llamaref synth` writes with FLAGS below, in F32, into
granitehybrid-moe-tiny-F32.json.gz here, and llama.cpp's spread on it into
granitehybrid-moe-tiny-F32.selfcheck.json. The test (../golden_test.go)
writes the same file again with internal/synth and checks its SHA-256
before comparing. Run from the repository root:

    python3 models/granitehybrid/testdata/moe_golden.py

The file: 3 blocks (Mamba-2, attention, Mamba-2), hidden 256, 8 query heads
and 2 KV heads of 32, Mamba-2 with 16 heads of 32, state 48 (not a multiple
of 32: the scan's tail) and 2 groups of B and C; 4 experts of width 128, 2
used, and a shared expert of width 256.

llama.cpp runs its AVX2 CPU backend ("haswell", as golden-next's logits);
the spread is the worst of two reruns against it, --cpu-variant sandybridge
and the prompt in batches of 7 (every prompt, prefill rows), and the
tolerance is twice that, rounded up to one significant digit, the rule of
goldentest.NextTolerance. Needs ../shared/tools/llamaref (build.sh prints
the binary) or SMOLGO_LLAMAREF. Only the standard library is used.
"""

import gzip
import hashlib
import json
import math
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
STEM = "granitehybrid-moe-tiny-F32"
FLAGS = ["--arch", "granitehybrid", "--seed", "40", "--name", STEM, "--n-layer", "3", "--attn-layers", "1",
         "--n-embd", "256", "--n-head", "8", "--n-head-kv", "2", "--n-ff", "128",
         "--n-expert", "4", "--n-expert-used", "2", "--n-ff-shexp", "256",
         "--ssm-state", "48", "--ssm-groups", "2", "--ssm-heads", "16"]
DECODE_STEPS = 8
DIGITS = 7


def log(*a):
    print("moe-golden:", *a, file=sys.stderr, flush=True)


def run(args):
    p = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{args[0]} {args[1]} failed: {p.stderr[-600:]}")
    return p.stdout


def llamaref():
    if os.environ.get("SMOLGO_LLAMAREF"):
        return os.environ["SMOLGO_LLAMAREF"]
    return run([os.path.join(ROOT, "..", "shared", "tools", "llamaref", "build.sh")]).strip()


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def prompts(n_vocab):
    r = random.Random(4242)
    return {"rand12": [r.randrange(n_vocab) for _ in range(12)],
            "rand100": [r.randrange(n_vocab) for _ in range(100)],
            "single": [r.randrange(n_vocab)]}


def logits(bin_, path, toks, *extra):
    return json.loads(run([bin_, "logits", "--model", path, "--tokens", ",".join(map(str, toks)),
                           "--decode", DECODE_STEPS, "--threads", "1", "--digits", DIGITS, *extra]))


def spread(a, b):
    worst, sq, n = 0.0, 0.0, 0
    for ra, rb in zip(a["prefill"], b["prefill"]):
        for x, y in zip(ra["logits"], rb["logits"]):
            d = abs(x - y)
            worst, sq, n = max(worst, d), sq + d * d, n + 1
    differ = sum(1 for ra, rb in zip(a["decode"], b["decode"]) if ra["token"] != rb["token"])
    return worst, math.sqrt(sq / max(1, n)), differ


def round_up1(x):
    if x <= 0:
        return 1e-6
    e = math.floor(math.log10(x))
    return float(f"{math.ceil(x / 10 ** e - 1e-9)}e{e}")


def main():
    bin_ = llamaref()
    work = tempfile.mkdtemp(prefix="moe-golden-")
    path = os.path.join(work, STEM + ".gguf")
    log("synth")
    run([bin_, "synth", "--out", path] + FLAGS)
    doc, runs = None, {}
    for name, toks in prompts(337).items():
        log("logits", name)
        r = logits(bin_, path, toks, "--cpu-variant", "haswell")
        runs[name] = []
        for extra in (["--cpu-variant", "sandybridge"], ["--cpu-variant", "haswell", "--batch", "7"]):
            worst, rms, differ = spread(r, logits(bin_, path, toks, *extra))
            runs[name].append({"rerun": " ".join(extra), "max_abs": worst, "rms": rms, "decode_tokens_differing": differ})
            log(f"{name} {' '.join(extra)}: max {worst:.3g} rms {rms:.3g}, {differ} decode tokens differ")
        if doc is None:
            doc = {"schema": "smolgo-golden-logits/1", "model": STEM + ".gguf", "model_sha256": sha256(path),
                   "engine": r["engine"], "version": r["version"], "cpu_backend": r["cpu_backend"],
                   "synth": FLAGS,
                   "settings": {"threads": 1, "batch": "whole prompt in one llama_decode", "kv_type": r["kv_type"],
                                "digits": DIGITS, "decode": "greedy (argmax of the previous row)"},
                   "n_vocab": r["n_vocab"], "prompts": []}
        doc["prompts"].append({"name": name, "tokens": r["tokens"], "prefill": r["prefill"], "decode": r["decode"]})
    out = os.path.join(HERE, STEM + ".json.gz")
    with open(out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as f:
        f.write(json.dumps(doc, separators=(",", ":")).encode())
    worst = max(x["max_abs"] for v in runs.values() for x in v)
    rms = max(x["rms"] for v in runs.values() for x in v)
    sc = {"model": STEM + ".gguf", "model_sha256": doc["model_sha256"], "cpu_backend": doc["cpu_backend"],
          "runs": runs, "tolerance": {"max_abs": round_up1(2 * worst), "rms": round_up1(2 * rms)}}
    with open(os.path.join(HERE, STEM + ".selfcheck.json"), "w") as f:
        json.dump(sc, f, indent=1)
        f.write("\n")
    log("wrote", os.path.relpath(out, ROOT), "tolerance", sc["tolerance"])


if __name__ == "__main__":
    main()
