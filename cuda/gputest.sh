#!/bin/sh
# gputest.sh runs the CUDA test suite from a prebuilt test binary, on a
# machine with an NVIDIA driver (R520 or newer) and no Go. Build it anywhere
# (no cgo, no CUDA toolkit):
#
#	CGO_ENABLED=0 GOARCH=amd64 go test -c -tags cuda -o cuda.test ./cuda
#
# then, from the repository root of a checkout (the tests read testdata/ and
# the golden data in ../shared, or SMOLGO_SHARED):
#
#	sh cuda/gputest.sh ./cuda.test
#
# It runs every kernel against the CPU reference, the golden logits, then the
# pp512/tg128 benchmarks, three times each, on SMOLGO_MODEL when set (the 3B
# Q4_K_M of ../shared/tools/peer-bench/make-3b.sh) or the tiny demo model.
# SMOLGO_GPU=1 turns "no GPU" into a failure. Extra arguments go to the binary.
set -eu
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
cd "$(dirname "$0")"
if [ -z "${SMOLGO_SHARED:-}" ]; then
	for d in ../../shared ../shared; do
		if [ -d "$d/golden" ]; then
			SMOLGO_SHARED=$(cd "$d" && pwd)
			export SMOLGO_SHARED
			break
		fi
	done
fi
export SMOLGO_GPU=1
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
"$bin" -test.v -test.run 'GPU|NoDriver|Plan' "$@"
"$bin" -test.run '^$' -test.bench 'GPU' -test.count 3 -test.benchtime 3x "$@"
