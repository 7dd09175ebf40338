#!/usr/bin/env bash
# Runs llama.cpp (../shared/tools/peer-bench/run.sh) and smolgo (examples/bench)
# on the same GGUF file with the same settings, alternating, and prints both JSON
# lines per round plus a summary of the medians and ratios. Run it on an idle
# machine: numbers taken at different times are not comparable here. The load
# average before and after is printed to stderr (check it: other jobs skew
# both engines).
#
#   examples/bench/compare.sh MODEL.gguf [-threads 2] [-pp 512] [-tg 64] [-reps 3] [-rounds 1] [-parallel N]
#
# -parallel N also measures N streams decoding at once in both (par_tps).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
model=${1:?usage: compare.sh MODEL.gguf [-threads N] [-pp N] [-tg N] [-reps N] [-rounds N] [-parallel N]}
shift
threads=2 pp=512 tg=64 reps=3 rounds=1 parallel=0
while [ $# -gt 0 ]; do
  case "$1" in
    -threads) threads=$2 ;; -pp) pp=$2 ;; -tg) tg=$2 ;; -reps) reps=$2 ;; -rounds) rounds=$2 ;; -parallel) parallel=$2 ;;
    *) echo "compare.sh: unknown flag $1" >&2; exit 2 ;;
  esac
  shift 2
done
peer=${PEER_BENCH:-../shared/tools/peer-bench/run.sh}
[ -x "$peer" ] || [ -f "$peer" ] || { echo "compare.sh: $peer not found (set PEER_BENCH)" >&2; exit 1; }
# A private binary: several checkouts may run this script at once.
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/smolgo-bench" ./examples/bench
out="$bin/results.jsonl"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq "$rounds"); do
  echo "round $r: llama.cpp" >&2
  bash "$peer" --model "$model" --threads "$threads" --pp "$pp" --tg "$tg" --reps "$reps" --parallel "$((parallel > 1 ? parallel : 1))" | tail -1 | tee -a "$out"
  echo "round $r: smolgo" >&2
  "$bin/smolgo-bench" -model "$model" -threads "$threads" -pp "$pp" -tg "$tg" -reps "$reps" -parallel "$parallel" 2>/dev/null | tee -a "$out"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in rows:
    by.setdefault(r["engine"], []).append(r)
def med(e, k):
    return statistics.median(x for r in by.get(e, []) for x in r.get(k + "_all", [r.get(k)]))
l, s = "llama.cpp", "smolgo"
print(f"{'':10} {'pp t/s':>8} {'tg t/s':>8} {'load s':>7} {'RSS MB':>7}")
for e in (l, s):
    rs = by.get(e, [])
    print(f"{e:10} {med(e,'pp_tps'):8.2f} {med(e,'tg_tps'):8.2f} {statistics.median(r['load_s'] for r in rs):7.2f} {max(r['peak_rss_mb'] for r in rs):7.0f}")
print(f"{'ratio':10} {med(s,'pp_tps')/med(l,'pp_tps'):8.2f}x {med(s,'tg_tps')/med(l,'tg_tps'):7.2f}x")
if all(r.get("par_tps") for e in (l, s) for r in by.get(e, [])):
    n = by[s][0]["parallel"]
    print(f"{n} streams, total decode t/s: llama.cpp {med(l,'par_tps'):.2f}, smolgo {med(s,'par_tps'):.2f} ({med(s,'par_tps')/med(l,'par_tps'):.2f}x)")
roof = [r for r in by.get(s, []) if r.get("read_gbps")]
if roof:
    gb = statistics.median(r["read_gbps"] for r in roof)
    tps = statistics.median(r["tg_roofline_tps"] for r in roof)
    print(f"memory read ceiling (smolgo's probe, per round: {', '.join(str(r['read_gbps']) for r in roof)} GB/s): "
          f"median {gb:.1f} GB/s = {tps:.1f} t/s decode roofline; decode reaches "
          f"llama.cpp {med(l,'tg_tps')/tps:.0%}, smolgo {med(s,'tg_tps')/tps:.0%} of it")
PY
