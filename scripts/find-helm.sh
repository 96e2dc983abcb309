#!/usr/bin/env bash
# Prints the path of the helm binary the chart scripts use: $HELM, else the
# one scripts/k8s-build.sh builds (target/k8s/helm-v4.3.2/helm, Helm from its
# Go module, pinned). Fails with what to run when there is none.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HELM_VERSION="v4.3.2"
helm="${HELM:-$root/target/k8s/helm-$HELM_VERSION/helm}"
if [[ ! -x "$helm" ]]; then
    echo "no helm at $helm: build it with scripts/k8s-build.sh helm (or set HELM)" >&2
    exit 1
fi
echo "$helm"
