#!/usr/bin/env bash
# Validate every manifests/*.yaml offline against the Kubernetes OpenAPI
# schemas bundled in the PyPI package kubernetes-validate (no API server; no
# network once the package is installed). Kinds without a bundled schema
# fail, except KubeSchedulerConfiguration (kube-scheduler's own file format),
# which validate_manifests.py checks by hand. See that file for details.
#
# Usage: scripts/validate-manifests.sh [FILE...]   (default: manifests/*.yaml)
# Exits non-zero if any document fails.
set -euo pipefail

KV_VERSION="1.37.0"   # PyPI kubernetes-validate; bundles schemas up to Kubernetes 1.37
K8S_VERSION="1.34.0"  # the oldest cluster minor we support (k8s-openapi feature v1_34)

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${KUBE_ARBITER_VALIDATE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-arbiter/kubernetes-validate-$KV_VERSION}"

if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c "import kubernetes_validate" 2>/dev/null; then
    echo "==> installing kubernetes-validate==$KV_VERSION into $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "kubernetes-validate==$KV_VERSION"
fi

if [[ $# -gt 0 ]]; then
    files=("$@")
else
    shopt -s nullglob
    files=("$root"/manifests/*.yaml)
    shopt -u nullglob
fi
if [[ ${#files[@]} -eq 0 ]]; then
    echo "no manifests to validate" >&2
    exit 1
fi

echo "==> validating ${#files[@]} manifest files against Kubernetes $K8S_VERSION (strict)"
if "$venv/bin/python" "$root/scripts/validate_manifests.py" "$K8S_VERSION" "${files[@]}"; then
    echo "all manifests valid"
else
    echo "manifest validation FAILED" >&2
    exit 1
fi
