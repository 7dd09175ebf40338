#!/usr/bin/env python3
"""Writes the golden logits of a family that llamaref synth cannot write
(granite, phi3, and the mixtures of experts mixtral, qwen2moe, granitemoe):
llama.cpp's logits on a synth preset (written by internal/synth, which the
family's test writes again, byte for byte) in F32, Q8_0 and Q4_K_M, into the
family's testdata. Run from the repository root:

    python3 internal/goldentest/testdata/synth_golden.py --preset granite-tiny --out models/granite/testdata [--selfcheck]
    python3 internal/goldentest/testdata/synth_golden.py --preset phi3-tiny --out models/phi3/testdata
    python3 internal/goldentest/testdata/synth_golden.py --preset phi3-tiny --out models/phi3/testdata --ctx 4096 --types F32 --suffix=-ctx4096

The mixtures of experts were made as ../shared/golden-next's were (its
tools/llamaref/golden_next.py): the stored run on llama.cpp's haswell (AVX2)
backend, a 100-token prompt, and llama.cpp's self-consistency written to
PRESET-selfcheck.json, from which their tests derive the tolerances:

    python3 internal/goldentest/testdata/synth_golden.py --preset mixtral-tiny --out models/llamaarch/testdata --moe
    python3 internal/goldentest/testdata/synth_golden.py --preset qwen2moe-tiny --out models/qwen2moe/testdata --moe
    python3 internal/goldentest/testdata/synth_golden.py --preset granitemoe-tiny --out models/granite/testdata --moe

(--moe is --cpu-variant haswell --long 100 --long-stride 10 --selfcheck
--round.) To keep these references small (about 40 KB a file), the long
prompt keeps the prefill rows of positions 0, 10, ..., 90 and its last (99;
the offsets within a batch of 7 all come up), every row of the short
prompts and every decode step, and --round rounds the logits of each type
to the decimals whose step is at most a fifth of the RMS tolerance the
selfcheck sets (its max rounding error is at most a tenth of it): 3
decimals for mixtral's and qwen2moe's F32 (tolerance 0.007), 2 for their
quantized files (0.2), more for granitemoe, whose logits are small. The
selfcheck's spreads are measured on the unrounded logits of every row.

llama.cpp loads and runs our synth's file, and its quantizer must give the
same Q8_0 and Q4_K_M bytes as ours (checked here). --ctx sets llama.cpp's
context length (default: the prompt's, rounded up to 256), which picks a
LongRoPE model's factors. --cpu-variant picks llama.cpp's CPU backend for
the stored logits (default: the best for the machine). With --selfcheck it
also measures llama.cpp's own spread on these files against the stored
logits: another CPU backend (haswell, or sandybridge when the stored run is
haswell's) and the prompt in batches of 7; it prints every number and writes
them to PRESET-selfcheck.json in --out (the schema of golden-next's
selfcheck.json: per type, per rerun, per prompt, [max |diff|, RMS diff] over
every prefill logit and the number of greedy decode steps fed a different
token).

It needs ../shared/tools/llamaref (build.sh prints the binary) or
SMOLGO_LLAMAREF. Only the standard library is used.
"""

import argparse
import filecmp
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


def prompts(n_vocab, long):
    # With long=100 these are golden-next's prompts (the same seed and order).
    r = random.Random(4242)
    return {"rand12": [r.randrange(n_vocab) for _ in range(12)],
            f"rand{long}": [r.randrange(n_vocab) for _ in range(long)],
            "single": [r.randrange(n_vocab)]}


def logits(bin_, path, toks, ctx, *extra):
    if ctx:
        extra = ("--ctx", ctx) + extra
    return json.loads(run([bin_, "logits", "--model", path, "--tokens", ",".join(map(str, toks)),
                           "--decode", DECODE_STEPS, "--threads", "1", "--digits", DIGITS, *extra]))


def spread(a, b):
    """max |a-b| and RMS over every prefill logit of one prompt; decode steps whose token differs."""
    worst, sq, n = 0.0, 0.0, 0
    for ra, rb in zip(a["prefill"], b["prefill"]):
        for x, y in zip(ra["logits"], rb["logits"]):
            d = abs(x - y)
            worst, sq, n = max(worst, d), sq + d * d, n + 1
    dec = sum(1 for ra, rb in zip(a["decode"], b["decode"]) if ra["token"] != rb["token"])
    return worst, (sq / max(1, n)) ** 0.5, dec


def rms_tolerance(check):
    """The RMS tolerance goldentest derives from one type's selfcheck: twice the worst, up to one significant digit."""
    worst = max(p[1] for prompts in check.values() for p in prompts)
    if worst <= 0:
        return 1e-6
    e = math.floor(math.log10(2 * worst))
    return math.ceil(2 * worst / 10 ** e - 1e-9) * 10 ** e


def decimals(check):
    """The fewest decimals whose step is at most a fifth of the type's RMS tolerance."""
    tol = rms_tolerance(check)
    d = 0
    while 10 ** -d > tol / 5:
        d += 1
    return d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", required=True, help="internal/synth preset (granite-tiny, phi3-tiny)")
    ap.add_argument("--out", required=True, help="directory for PRESET-TYPE[SUFFIX].json.gz")
    ap.add_argument("--types", default="F32,Q8_0,Q4_K_M")
    ap.add_argument("--ctx", type=int, default=0, help="llama.cpp's context length (0: its default)")
    ap.add_argument("--suffix", default="", help="added to the reference's name")
    ap.add_argument("--cpu-variant", default="", help="llama.cpp's CPU backend for the stored logits (default: its choice)")
    ap.add_argument("--long", type=int, default=64, help="length of the long prompt")
    ap.add_argument("--selfcheck", action="store_true", help="measure llama.cpp's own spread on the files (PRESET-selfcheck.json)")
    ap.add_argument("--long-stride", type=int, default=1, help="keep the long prompt's prefill rows at multiples of this and its last")
    ap.add_argument("--round", action="store_true", help="round each type's logits to a fifth of its selfcheck RMS tolerance (needs --selfcheck)")
    ap.add_argument("--moe", action="store_true",
                    help="golden-next's settings, kept small: --cpu-variant haswell --long 100 --long-stride 10 --selfcheck --round")
    a = ap.parse_args()
    if a.moe:
        a.cpu_variant, a.long, a.long_stride, a.selfcheck, a.round = "haswell", 100, 10, True, True
    if a.round and not a.selfcheck:
        sys.exit("--round needs --selfcheck (the tolerance it rounds to)")
    PRESET, TYPES = a.preset, a.types.split(",")
    bin_ = llamaref()
    work = tempfile.mkdtemp(prefix="synth-golden-")
    checks, backend, other = {}, None, None
    f32 = os.path.join(work, PRESET + "-F32.gguf")
    if "F32" not in TYPES:
        run(["go", "run", "./internal/synth/cmd/synth", "-preset", PRESET, "-type", "F32", "-o", f32], cwd=ROOT)
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
        stored = ["--cpu-variant", a.cpu_variant] if a.cpu_variant else []
        for name, toks in prompts(337, a.long).items():
            log("logits", t, name)
            r = logits(bin_, path, toks, a.ctx, *stored)
            if a.selfcheck:
                backend = r["cpu_backend"]
                other = "sandybridge" if backend == "haswell" else "haswell"
                c = checks.setdefault(t, {"variant": [], "batch7": []})
                for key, extra in (("variant", ["--cpu-variant", other]), ("batch7", stored + ["--batch", "7"])):
                    worst, rms, dec = spread(r, logits(bin_, path, toks, a.ctx, *extra))
                    c[key].append([round(worst, 6), round(rms, 6), dec])
                    print(f"{t} {name} {' '.join(extra)}: max {worst:.3g} rms {rms:.3g}, {dec} decode tokens differ")
            if doc is None:
                doc = {"schema": "smolgo-golden-logits/1", "model": f"{PRESET}-{t}.gguf", "model_sha256": sha256(path),
                       "engine": r["engine"], "version": r["version"], "cpu_backend": r["cpu_backend"],
                       "settings": {"threads": 1, "batch": "whole prompt in one llama_decode", "kv_type": r["kv_type"],
                                    "n_ctx": r.get("n_ctx"),
                                    "digits": DIGITS, "decode": "greedy (argmax of the previous row)"},
                       "n_vocab": r["n_vocab"], "prompts": []}
            prefill = r["prefill"]
            if name == f"rand{a.long}" and a.long_stride > 1:
                n = len(prefill)
                prefill = [row for row in prefill if row["pos"] % a.long_stride == 0 or row["pos"] == n - 1]
                doc["settings"]["rows"] = f"every position; rand{a.long}: multiples of {a.long_stride} and the last"
            doc["prompts"].append({"name": name, "tokens": r["tokens"], "prefill": prefill, "decode": r["decode"]})
        if a.round:
            d = decimals(checks[t])
            for p in doc["prompts"]:
                for row in p["prefill"] + p["decode"]:
                    row["logits"] = [round(x, d) for x in row["logits"]]
            del doc["settings"]["digits"]
            doc["settings"]["decimals"] = d
            log(t, "rounded to", d, "decimals")
        out = os.path.join(ROOT, a.out, f"{PRESET}-{t}{a.suffix}.json.gz")
        with open(out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as f:
            f.write(json.dumps(doc, separators=(",", ":")).encode())
        log("wrote", os.path.relpath(out, ROOT))
    if a.selfcheck:
        sc = {"schema": "smolgo-golden-next-selfcheck/1", "preset": PRESET, "cpu_backend": backend, "other_variant": other,
              "note": "per type, per rerun (variant: --cpu-variant other_variant; batch7: --batch 7), per prompt "
                      f"(rand12, rand{a.long}, single): [max |diff|, RMS diff] over every prefill logit, and the number "
                      "of greedy decode steps whose fed token differs",
              "models": {PRESET: checks}}
        out = os.path.join(ROOT, a.out, f"{PRESET}{a.suffix}-selfcheck.json")
        with open(out, "w") as f:
            json.dump(sc, f, indent=1)
            f.write("\n")
        log("wrote", os.path.relpath(out, ROOT))


if __name__ == "__main__":
    main()
