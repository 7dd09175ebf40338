#!/bin/sh
# Remakes the PTX in ../ from the CUDA C here: `go generate ./cuda`.
#
# Needs nvcc (Debian: apt-get install nvidia-cuda-toolkit, from non-free).
# NVCC overrides the compiler command, e.g. with a newer host gcc than CUDA
# 11.8 knows: NVCC="nvcc -ccbin gcc -allow-unsupported-compiler".
# The PTX targets sm_80 (Ampere); the driver compiles it for newer GPUs.
# sources.sum records the SHA-256 of the sources the PTX was made from
# (TestPTXUpToDate compares it).
set -eu
cd "$(dirname "$0")"
NVCC=${NVCC:-nvcc}
for f in matmul ops attn; do
	$NVCC -ptx -arch=sm_80 -O3 -o ../$f.ptx $f.cu
done
sha256sum *.cu *.cuh > ../sources.sum
