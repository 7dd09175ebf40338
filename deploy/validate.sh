#!/usr/bin/env bash
# Validates deploy/kubernetes/*.yaml against the schemas of the APIs they
# use, with kubeconform (a Go module), strictly: unknown fields are errors.
# Everything comes from the Go module proxy, pinned:
#   kubeconform            the validator, and its openapi2jsonschema.py
#   k8s.io/kubernetes      the API server's OpenAPI documents (Deployment,
#                          Service, ConfigMap)
#   sigs.k8s.io/gateway-api                    the HTTPRoute CRD
#   sigs.k8s.io/gateway-api-inference-extension the InferencePool CRD
# and the schemas are converted once into ${SMOLGO_CACHE:-~/.cache/smolgo}.
# Needs python3 with PyYAML (Debian's python3-yaml). Then it checks that
# the validator bites: a manifest with a misspelt field must fail.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD

KUBECONFORM=v0.7.0
KUBERNETES=v1.34.0
GATEWAY_API=v1.4.1
GIE=v1.4.0

cache=${SMOLGO_CACHE:-$HOME/.cache/smolgo}/kubeconform-$KUBECONFORM-k8s-$KUBERNETES-gw-$GATEWAY_API-gie-$GIE
bin=$cache/bin/kubeconform
schemas=$cache/schemas
if [ ! -x "$bin" ] || [ ! -f "$schemas/.done" ]; then
  python3 -c 'import yaml' 2>/dev/null || { echo "deploy/validate.sh: needs PyYAML (apt-get install python3-yaml)" >&2; exit 1; }
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  # Outside the repository, so its go.mod and go.sum stay as they are.
  cd "$work"
  export GOFLAGS=-mod=mod
  GOBIN=$cache/bin go install "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM"
  dir() { go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'; }
  kc=$(dir "github.com/yannh/kubeconform@$KUBECONFORM")
  kube=$(dir "k8s.io/kubernetes@$KUBERNETES")
  gw=$(dir "sigs.k8s.io/gateway-api@$GATEWAY_API")
  gie=$(dir "sigs.k8s.io/gateway-api-inference-extension@$GIE")
  rm -rf "$schemas"
  PYTHONPATH=$kc/scripts python3 "$repo/deploy/schemas.py" "$schemas" "$kube" \
    "$gw/config/crd/standard/gateway.networking.k8s.io_httproutes.yaml" \
    "$gie/config/crd/bases/inference.networking.k8s.io_inferencepools.yaml" >/dev/null
  touch "$schemas/.done"
  cd "$repo"
fi

validate() { "$bin" -strict -summary -schema-location "$schemas/{{.ResourceKind}}{{.KindSuffix}}.json" "$@"; }
validate deploy/kubernetes/

bad=$(mktemp -d)
sed 's/^  replicas:/  replicaz:/' deploy/kubernetes/deployment.yaml >"$bad/deployment.yaml"
if validate "$bad/" >/dev/null; then
  echo "deploy/validate.sh: a Deployment with a misspelt field passed: the validator checks nothing" >&2
  exit 1
fi
rm -rf "$bad"
echo "deploy/validate.sh: the manifests validate, and a misspelt field is refused"
