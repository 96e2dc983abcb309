#!/usr/bin/env bash
# The checks of charts/kube-arbiter, with the real Helm:
# 1. `helm lint --strict` with the default values and with each
#    charts/kube-arbiter/ci/*-values.yaml (the documented combinations);
# 2. values.schema.json refuses what kube-arbiter would refuse;
# 3. the ServiceMonitor appears where the Prometheus Operator's API is;
# 4. scripts/validate-manifests.sh --chart: `helm template` of each
#    combination, validated against the Kubernetes schemas and the security
#    checks;
# 5. scripts/render-manifests.sh --check: manifests/ is the chart's output.
#
# Usage: scripts/chart-check.sh
# helm: $HELM, else target/k8s/helm-v4.3.2/helm (scripts/k8s-build.sh helm).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
helm="$("$root/scripts/find-helm.sh")"
chart="$root/charts/kube-arbiter"
"$helm" version --short

echo "==> helm lint --strict"
"$helm" lint --strict "$chart"
for values in "$chart"/ci/*-values.yaml; do
    "$helm" lint --strict --quiet "$chart" -f "$values"
done

echo "==> values the schema refuses"
refused() { # MESSAGE FLAGS...: helm template must fail, saying MESSAGE
    local message="$1" out
    shift
    if out="$("$helm" template kube-arbiter "$chart" --namespace kube-system "$@" 2>&1)"; then
        echo "FAIL: helm template $* rendered; the schema should refuse it" >&2
        exit 1
    fi
    if ! grep -qF -- "$message" <<<"$out"; then
        echo "FAIL: helm template $* failed without saying \"$message\":" >&2
        echo "$out" >&2
        exit 1
    fi
    echo "refused: $*"
}
refused "/config/scheduling/role" --set config.scheduling.role=enforcing
refused "/certificates/mode" --set certificates.mode=manual
refused "/config/server" --set config.server.unknownKey=1
refused "/config/scheduling/extra/kubernetesVersion" --set-string config.scheduling.extra.kubernetesVersion=1.32
refused "/config/scheduling/extra/featureGates" --set config.scheduling.extra.featureGates.SomeGate=true
refused "/webhook/url" --set webhook.url=http://127.0.0.1:8443
refused "schedulerConfigFile is for the default scheduler" \
    --set schedulerConfigFile=true --set secondScheduler.enabled=true

echo "==> ServiceMonitor only with monitoring.coreos.com/v1"
if "$helm" template kube-arbiter "$chart" --namespace kube-system | grep -q '^kind: ServiceMonitor$'; then
    echo "FAIL: a ServiceMonitor without the monitoring.coreos.com/v1 API" >&2
    exit 1
fi
"$helm" template kube-arbiter "$chart" --namespace kube-system \
    --api-versions monitoring.coreos.com/v1/ServiceMonitor --show-only templates/servicemonitor.yaml |
    grep -q '^kind: ServiceMonitor$'
echo "ok"

echo "==> scripts/validate-manifests.sh --chart"
HELM="$helm" "$root/scripts/validate-manifests.sh" --chart

echo "==> scripts/render-manifests.sh --check"
HELM="$helm" "$root/scripts/render-manifests.sh" --check
