#!/usr/bin/env python3
"""Regenerates the golden logits of package granite: llama.cpp's logits on
the synth preset granite-tiny (written by internal/synth, which the tests
write again, byte for byte) in F32, Q8_0 and Q4_K_M.

llamaref synth (../shared/golden-families' writer) has no granite, so the
model comes from our synth; llama.cpp then loads and runs it, and its
quantizer must give the same Q8_0 and Q4_K_M bytes as ours (checked here).
With --selfcheck it also measures llama.cpp's own spread on these files
(its AVX2 backend, and the prompt in batches of 7) against the stored
logits. Run from the repository root:

    python3 granite/testdata/golden.py [--selfcheck]

It needs ../shared/tools/llamaref (build.sh prints the binary) or
SMOLGO_LLAMAREF. Only the standard library is used.
"""

import argparse
import filecmp
import gzip
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PRESET = "granite-tiny"
TYPES = ["F32", "Q8_0", "Q4_K_M"]
DECODE_STEPS = 8
DIGITS = 7  # F32 tolerance is 0.09: seven significant digits are plenty


def log(*a):
    print("golden:", *a, file=sys.stderr, flush=True)


def run(args, **kw):
    p = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kw)
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
            "rand64": [r.randrange(n_vocab) for _ in range(64)],
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
    return worst, (sq / max(1, n)) ** 0.5


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--selfcheck", action="store_true", help="measure llama.cpp's own spread on the files")
    a = ap.parse_args()
    bin_ = llamaref()
    work = tempfile.mkdtemp(prefix="granite-golden-")
    f32 = os.path.join(work, PRESET + "-F32.gguf")
    for t in TYPES:
        path = os.path.join(work, f"{PRESET}-{t}.gguf")
        log("synth", t)
        run(["go", "run", "./internal/synth/cmd/synth", "-preset", PRESET, "-type", t, "-o", path], cwd=ROOT)
        if t != "F32":
            theirs = os.path.join(work, f"{PRESET}-{t}-llama.cpp.gguf")
            run([bin_, "quantize", f32, theirs, t, "--threads", "2"])
            if not filecmp.cmp(path, theirs, shallow=False):
                sys.exit(f"synth's {t} file differs from llama.cpp's quantization of the F32 one")
        doc = None
        for name, toks in prompts(337).items():
            log("logits", t, name)
            r = logits(bin_, path, toks)
            if a.selfcheck:
                for extra in (["--cpu-variant", "haswell"], ["--batch", "7"]):
                    worst, rms = spread(r, logits(bin_, path, toks, *extra))
                    print(f"{t} {name} {' '.join(extra)}: max {worst:.3g} rms {rms:.3g}")
            if doc is None:
                doc = {"schema": "smolgo-golden-logits/1", "model": f"{PRESET}-{t}.gguf", "model_sha256": sha256(path),
                       "engine": r["engine"], "version": r["version"], "cpu_backend": r["cpu_backend"],
                       "settings": {"threads": 1, "batch": "whole prompt in one llama_decode", "kv_type": r["kv_type"],
                                    "digits": DIGITS, "decode": "greedy (argmax of the previous row)"},
                       "n_vocab": r["n_vocab"], "prompts": []}
            doc["prompts"].append({"name": name, "tokens": r["tokens"], "prefill": r["prefill"], "decode": r["decode"]})
        out = os.path.join(HERE, f"{PRESET}-{t}.json.gz")
        with open(out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as f:
            f.write(json.dumps(doc, separators=(",", ":")).encode())
        log("wrote", os.path.relpath(out, ROOT))


if __name__ == "__main__":
    main()
