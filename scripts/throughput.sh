#!/usr/bin/env bash
# kube-scheduler 1.37's throughput alone, with a do-nothing extender, and
# with kube-arbiter in both roles, on a real control plane
# (benches/scheduler_throughput.rs says what it measures):
#
#   scripts/throughput.sh [--nodes N] [--pods P] [--rounds R] [--client-qps Q] [--profile] [plain|anti-affinity|affinity|spread|preemption]...
#
# Defaults: 5,000 nodes, 1,000 pods per run, 3 rounds, every workload,
# kube-scheduler's client at its default 50 requests a second (as shipped).
# Builds kube-arbiter in release (the bench profile) and the Kubernetes
# binaries when missing. Run it on a quiet machine: the numbers are ratios
# from one run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/k8s-build.sh 1.37
KUBE_ARBITER_K8S_DIR=target/k8s/v1.37.2 cargo bench --locked --bench scheduler_throughput -- "$@"
