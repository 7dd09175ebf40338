#!/usr/bin/env bash
# ci.sh: the CUDA backend's checks that need no GPU, run by .ci/run after the
# README's test command: the cuda-tagged build without cgo for linux/amd64
# and linux/arm64, vet, ptxas on every kernel for sm_80 and sm_90 against
# budget.txt, and the tagged tests (the no-driver paths; the GPU tests skip
# without a GPU).
#
# ptxas comes from Debian's nvidia-cuda-toolkit (non-free). Installing that
# package pulls in the NVIDIA driver libraries (libcuda1), which would put a
# libcuda.so.1 on a machine that must show the "no driver" path, so this
# script only downloads the package (84 MB, through a throwaway apt source
# list that leaves /etc/apt alone) and unpacks it under ~/.cache; nothing is
# installed. PTXAS=/path/to/ptxas skips the download.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

for arch in amd64 arm64; do
  CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -tags cuda ./...
  CGO_ENABLED=0 GOOS=linux GOARCH=$arch go vet -tags cuda ./cuda
done

if [ -z "${PTXAS:-}" ]; then
  PTXAS=$(command -v ptxas || true)
fi
if [ -z "$PTXAS" ]; then
  tk="${XDG_CACHE_HOME:-$HOME/.cache}/smolgo/cudatk"
  if [ ! -x "$tk/usr/bin/ptxas" ]; then
    codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    mkdir -p "$tmp/lists/partial"
    key=/usr/share/keyrings/debian-archive-keyring.gpg
    printf 'deb [signed-by=%s] http://deb.debian.org/debian %s non-free\ndeb [signed-by=%s] http://deb.debian.org/debian %s-updates non-free\n' \
      "$key" "$codename" "$key" "$codename" > "$tmp/sources.list"
    apt_opts=(-o APT::Sandbox::User=root -o "Dir::Etc::SourceList=$tmp/sources.list" -o "Dir::Etc::SourceParts=/nonexistent" -o "Dir::State::Lists=$tmp/lists")
    echo "cuda/ci.sh: downloading ptxas (nvidia-cuda-toolkit, $codename non-free)"
    apt-get "${apt_opts[@]}" update -qq
    (cd "$tmp" && apt-get "${apt_opts[@]}" download -qq nvidia-cuda-toolkit)
    mkdir -p "$tk"
    dpkg -x "$tmp"/nvidia-cuda-toolkit_*.deb "$tk"
  fi
  PTXAS="$tk/usr/bin/ptxas"
fi
"$PTXAS" --version | tail -1
export PTXAS
SMOLGO_PTXAS=required CGO_ENABLED=0 go test -count=1 -tags cuda ./cuda
