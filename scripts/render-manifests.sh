#!/usr/bin/env bash
# manifests/ is the output of the chart charts/kube-arbiter: this script
# writes it, and with --check fails (showing the diff) when the committed
# files differ from what the chart renders. Edit the chart, then run it.
#
# Each file comes from `helm template kube-arbiter charts/kube-arbiter -n
# kube-system` with the chart's default values, split by template, except
# the alternatives to apply instead of a default file:
#   scheduler-config.yaml           --set schedulerConfigFile=true
#   configmap-enforcer.yaml         --set config.scheduling.role=enforcer
#   scheduler-config-enforcer.yaml  both of the above
#   cert-manager/*                  --set certificates.mode=cert-manager
#   mutating-webhook-podgroups.yaml --set webhook.podGroups.enabled=true
#
# Usage: scripts/render-manifests.sh [--check]
# helm: $HELM, else target/k8s/helm-v4.3.2/helm (scripts/k8s-build.sh helm).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
helm="$("$root/scripts/find-helm.sh")"
check=0
if [[ "${1:-}" == "--check" ]]; then
    check=1
    shift
fi
if [[ $# -gt 0 ]]; then
    echo "usage: scripts/render-manifests.sh [--check]" >&2
    exit 2
fi

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

render() { # OUTDIR [helm template flags...]: one file per template in OUTDIR
    local dir="$1"
    shift
    mkdir -p "$dir"
    "$helm" template kube-arbiter "$root/charts/kube-arbiter" --namespace kube-system "$@" |
        python3 -c '
import os, re, sys
# helm prints every document as "---", "# Source: CHART/templates/FILE",
# then the document; a template with several documents prints several.
header = "# Rendered from charts/kube-arbiter by scripts/render-manifests.sh:\n# edit the chart, not this file.\n"
files = {}
for chunk in re.split(r"^---\n", sys.stdin.read(), flags=re.M):
    m = re.match(r"# Source: [^/]+/templates/(\S+)\n", chunk)
    if not m:
        if chunk.strip():
            sys.exit("unexpected helm output: " + chunk[:200])
        continue
    files.setdefault(m.group(1), []).append(chunk[m.end():].strip("\n") + "\n")
for name, docs in files.items():
    path = os.path.join(sys.argv[1], name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(header + "---\n".join(docs))
' "$dir"
}

render "$out/default"
render "$out/scheduler" --set schedulerConfigFile=true --show-only templates/scheduler-config.yaml
render "$out/enforcer" --set config.scheduling.role=enforcer
render "$out/enforcer-scheduler" --set config.scheduling.role=enforcer --set schedulerConfigFile=true \
    --show-only templates/scheduler-config.yaml
render "$out/cert-manager" --set certificates.mode=cert-manager
render "$out/podgroups" --set webhook.podGroups.enabled=true --show-only templates/mutating-webhook.yaml

want="$out/manifests"
mkdir -p "$want/cert-manager"
for f in rbac configmap service pdb priorityclasses networkpolicy deployment mutating-webhook validating-webhook; do
    mv "$out/default/$f.yaml" "$want/$f.yaml"
done
mv "$out/scheduler/scheduler-config.yaml" "$want/scheduler-config.yaml"
mv "$out/enforcer/configmap.yaml" "$want/configmap-enforcer.yaml"
mv "$out/enforcer-scheduler/scheduler-config.yaml" "$want/scheduler-config-enforcer.yaml"
mv "$out/podgroups/mutating-webhook.yaml" "$want/mutating-webhook-podgroups.yaml"
for f in issuer certificate scheduler-client; do
    mv "$out/cert-manager/cert-manager/$f.yaml" "$want/cert-manager/$f.yaml"
done
for f in mutating-webhook validating-webhook; do
    mv "$out/cert-manager/$f.yaml" "$want/cert-manager/$f.yaml"
done
# Anything else the default rendering holds would be missing from manifests/.
left="$(find "$out/default" -type f)"
if [[ -n "$left" ]]; then
    echo "templates rendered by default but not placed in manifests/: $left" >&2
    exit 1
fi

if [[ $check -eq 1 ]]; then
    if diff -ru "$root/manifests" "$want"; then
        echo "manifests/ matches the chart"
    else
        echo "manifests/ differs from the chart's rendering (above: - committed, + rendered): run scripts/render-manifests.sh" >&2
        exit 1
    fi
else
    rm -rf "$root/manifests"
    cp -r "$want" "$root/manifests"
    echo "wrote manifests/ from charts/kube-arbiter"
fi
