#!/usr/bin/env bash
# Validate every manifests/*.yaml offline against the Kubernetes OpenAPI
# schemas bundled in the PyPI package kubernetes-validate (no API server; no
# network once the package is installed). Kinds without a bundled schema
# fail, except KubeSchedulerConfiguration (kube-scheduler's own file format),
# which validate_manifests.py checks by hand, and the cert-manager kinds,
# checked against scripts/schemas/. See validate_manifests.py for details.
#
# It also checks the security settings (docs/security.md): the scheduler
# configs carry kube-scheduler's client certificate, the Deployment passes
# --client-ca and never the flag that serves the extender verbs
# unauthenticated, a scheduler config without bindVerb pairs with
# --disable-bind-verb, RBAC grants nothing beyond what kube-arbiter needs,
# and the NetworkPolicy admits only port 8443 to kube-arbiter's pods.
#
# Usage: scripts/validate-manifests.sh [--complete [--no-network-policy]] [FILE...]
#        scripts/validate-manifests.sh --chart
#   default: manifests/*.yaml, manifests/cert-manager/*.yaml and
#   examples/demo-cluster.yaml (a kind: List), as a complete deployment.
#   --complete: the FILEs given are the whole deployment; the Deployment,
#   a scheduler config, the ClusterRole and the NetworkPolicy must be there
#   (not the NetworkPolicy with --no-network-policy).
#   --chart: every documented rendering of charts/kube-arbiter, each as a
#   complete deployment: `helm template` with the default values and with
#   each charts/kube-arbiter/ci/*-values.yaml. Where kube-arbiter serves the
#   cluster's own kube-scheduler, the rendering includes the configuration
#   file the chart renders for it (schedulerConfigFile); with
#   networkPolicy.enabled false in the values, no NetworkPolicy is required.
#   helm: $HELM, else target/k8s/helm-v4.3.2/helm (scripts/k8s-build.sh helm).
# Exits non-zero if any document fails.
set -euo pipefail

KV_VERSION="1.37.0"   # PyPI kubernetes-validate; bundles schemas up to Kubernetes 1.37
# The oldest Kubernetes the manifests claim to support (README "Kubernetes
# versions"), and the one kube-arbiter is built and tested against
# (k8s-openapi feature v1_34), and the newest the real-cluster suite runs.
# Every file is checked against each.
K8S_VERSIONS=("1.25.0" "1.34.0" "1.37.0")

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# A plain `pip install --target` directory rather than a venv: Debian's
# python3 has no venv module unless python3-venv is installed, and --target
# is not refused as an "externally managed environment".
pkgs="${KUBE_ARBITER_VALIDATE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-arbiter/kubernetes-validate-$KV_VERSION}"

if [[ ! -f "$pkgs/.installed" ]]; then
    echo "==> installing kubernetes-validate==$KV_VERSION into $pkgs"
    # Install beside it and rename, so two runs at once (parallel tests)
    # never see a half-installed directory.
    staging="$pkgs.partial.$$"
    rm -rf "$staging"
    mkdir -p "$(dirname "$pkgs")"
    python3 -m pip install --quiet --disable-pip-version-check --target "$staging" \
        "kubernetes-validate==$KV_VERSION"
    touch "$staging/.installed"
    [[ -f "$pkgs/.installed" ]] || rm -rf "$pkgs"   # a leftover of an interrupted install
    mv -T "$staging" "$pkgs" 2>/dev/null || rm -rf "$staging"
fi

if [[ "${1:-}" == "--chart" ]]; then
    helm="$("$root/scripts/find-helm.sh")"
    chart="$root/charts/kube-arbiter"
    out="$(mktemp -d)"
    trap 'rm -rf "$out"' EXIT
    failed=0
    for values in default "$chart"/ci/*-values.yaml; do
        name="$(basename "$values" -values.yaml)"
        flags=()
        [[ "$values" == default ]] || flags=(-f "$values")
        rendering="$out/$name.yaml"
        "$helm" template kube-arbiter "$chart" --namespace kube-system "${flags[@]}" > "$rendering"
        if ! grep -q '^ *kind: KubeSchedulerConfiguration$' "$rendering"; then
            printf -- '---\n' >> "$rendering"
            "$helm" template kube-arbiter "$chart" --namespace kube-system "${flags[@]}" \
                --set schedulerConfigFile=true --show-only templates/scheduler-config.yaml >> "$rendering"
        fi
        checks=(--complete)
        if [[ "$values" != default ]] && [[ "$(PYTHONPATH="$pkgs" python3 -s -c '
import sys, yaml
values = yaml.safe_load(open(sys.argv[1])) or {}
print((values.get("networkPolicy") or {}).get("enabled", True))' "$values")" == False ]]; then
            checks+=(--no-network-policy)
        fi
        for version in "${K8S_VERSIONS[@]}"; do
            echo "==> validating the chart rendering $name against Kubernetes $version (strict)"
            PYTHONPATH="$pkgs" python3 -s "$root/scripts/validate_manifests.py" "$version" "${checks[@]}" "$rendering" || failed=1
        done
    done
    if [[ $failed -eq 0 ]]; then
        echo "all chart renderings valid"
    else
        echo "chart rendering validation FAILED" >&2
        exit 1
    fi
    exit 0
fi

complete=()
if [[ "${1:-}" == "--complete" ]]; then
    complete=(--complete)
    shift
    if [[ "${1:-}" == "--no-network-policy" ]]; then
        complete+=(--no-network-policy)
        shift
    fi
fi
if [[ $# -gt 0 ]]; then
    files=("$@")
else
    complete=(--complete)
    shopt -s nullglob
    files=("$root"/manifests/*.yaml "$root"/manifests/cert-manager/*.yaml "$root"/examples/demo-cluster.yaml)
    shopt -u nullglob
fi
if [[ ${#files[@]} -eq 0 ]]; then
    echo "no manifests to validate" >&2
    exit 1
fi

failed=0
for version in "${K8S_VERSIONS[@]}"; do
    echo "==> validating ${#files[@]} manifest files against Kubernetes $version (strict)"
    # -s: ignore the user's site-packages; PYTHONPATH puts our copies first.
    PYTHONPATH="$pkgs" python3 -s "$root/scripts/validate_manifests.py" "$version" "${complete[@]}" "${files[@]}" || failed=1
done
if [[ $failed -eq 0 ]]; then
    echo "all manifests valid"
else
    echo "manifest validation FAILED" >&2
    exit 1
fi
