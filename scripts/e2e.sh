#!/usr/bin/env bash
# The real-cluster suite: builds the Kubernetes components and helm when
# missing (scripts/k8s-build.sh) and runs tests/real_cluster.rs,
# tests/real_operations.rs, tests/real_helm.rs (the chart installed with
# the real helm) and tests/real_differential.rs (the filter against
# kube-scheduler's own plugins) against them, one test at a time (each
# starts its own etcd, kube-apiserver, kube-controller-manager and
# kube-scheduler on loopback).
#
#   scripts/e2e.sh [1.37|1.34|all] [TEST-NAME-FILTER]   (default: 1.37)
#
# Tests named v1_37_* need 1.37 (a feature such as gang scheduling, or its
# kube-scheduler's behaviour) and are skipped on 1.34. Each test's logs (every component's) stay in
# target/tmp/real-cluster/<test>/; a failing test prints their last lines.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

which=${1:-1.37}
filter=${2:-}
case $which in
1.37 | 1.34) versions=("$which") ;;
all) versions=(1.37 1.34) ;;
*)
    echo "usage: scripts/e2e.sh [1.37|1.34|all] [TEST-NAME-FILTER]" >&2
    exit 2
    ;;
esac

release() {
    case $1 in
    1.37) echo v1.37.2 ;;
    1.34) echo v1.34.4 ;;
    esac
}

scripts/k8s-build.sh "${versions[@]}" helm
for minor in "${versions[@]}"; do
    skip=()
    [ "$minor" = 1.37 ] || skip=(--skip v1_37_)
    echo "==> real-cluster suite on Kubernetes $(release "$minor")"
    KUBE_ARBITER_K8S_DIR=target/k8s/$(release "$minor") \
        cargo test --locked --test real_cluster --test real_operations --test real_helm --test real_differential -- \
        --ignored --test-threads=1 "${skip[@]}" $filter
done
