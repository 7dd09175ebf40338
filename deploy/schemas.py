"""Writes the JSON schemas that kubeconform validates deploy/kubernetes/ with.

Usage: schemas.py OUT KUBERNETES_DIR CRD_FILE...

KUBERNETES_DIR is the k8s.io/kubernetes module (from the Go module proxy),
whose api/openapi-spec/v3 holds the API server's own OpenAPI documents; each
CRD_FILE is a CustomResourceDefinition (the Gateway API's, the Inference
Extension's, from their Go modules). The conversion is kubeconform's own
(scripts/openapi2jsonschema.py in its module, imported from PYTHONPATH):
strict schemas (additionalProperties false wherever properties are listed)
and int-or-string made a oneOf. Files are named as kubeconform's
{{.ResourceKind}}{{.KindSuffix}}.json template expects:
deployment-apps-v1.json, service-v1.json, httproute-gateway-v1.json.
"""
import json
import os
import sys

import openapi2jsonschema as kc  # kubeconform's script

out, kube, crds = sys.argv[1], sys.argv[2], sys.argv[3:]
os.makedirs(out, exist_ok=True)
os.chdir(out)  # kubeconform's writer writes to the current directory

# The built-in kinds: each schema file is the document's components with a
# $ref to the kind, so references between definitions resolve inside it.
# The core and apps groups are what deploy/ uses (Deployment, Service,
# ConfigMap); add documents here for other kinds.
for doc_name in ["api__v1_openapi.json", "apis__apps__v1_openapi.json"]:
    path = os.path.join(kube, "api", "openapi-spec", "v3", doc_name)
    with open(path) as f:
        doc = json.load(f)
    schemas = doc.get("components", {}).get("schemas", {})
    for name, schema in schemas.items():
        for gvk in schema.get("x-kubernetes-group-version-kind", []):
            if not name.endswith("." + gvk["kind"]) or name.endswith("List"):
                continue
            group = gvk["group"].split(".")[0]
            suffix = ("-" + group if group else "") + "-" + gvk["version"]
            kc.write_schema_file({"$ref": "#/components/schemas/" + name, "components": {"schemas": schemas}},
                                 (gvk["kind"] + suffix).lower() + ".json")

# The custom resources, by kubeconform's converter.
os.environ["FILENAME_FORMAT"] = "{kind}-{group}-{version}"
sys.argv = ["openapi2jsonschema.py"] + [os.path.abspath(c) for c in crds]
with open(kc.__file__) as f:
    exec(compile(f.read(), kc.__file__, "exec"), {"__name__": "__main__"})
