#!/usr/bin/env bash
# Load test of the pod admission webhook over TLS, loopback only, against
# the release binary: p99 latency with one keep-alive connection, then
# throughput with 8 concurrent keep-alive connections. Each wrk run is
# bounded by DURATION seconds and the server is stopped at the end.
#
#   cargo build --release && scripts/load-admission.sh [DURATION]
#
# Environment: BIN (target/release/kube-arbiter), STATE
# (examples/demo-cluster.yaml), BODY (examples/requests/admit-create-default-class.json),
# PORT (18443), THREADS for the 8-connection run (2), RUST_LOG (warn: the
# per-decision info lines would otherwise be measured too).
# Needs wrk (Debian package `wrk`: apt-get install -y wrk) and curl.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/client-tls.sh

duration=${1:-10}
bin=${BIN:-target/release/kube-arbiter}
state=${STATE:-examples/demo-cluster.yaml}
port=${PORT:-18443}
threads=${THREADS:-2}
export BODY=${BODY:-examples/requests/admit-create-default-class.json}
url="https://127.0.0.1:${port}/admission/priority"

command -v wrk >/dev/null || { echo "wrk is not installed: apt-get install -y wrk" >&2; exit 2; }
[ -x "$bin" ] || { echo "$bin not found: run cargo build --release first" >&2; exit 2; }
[ -f "$state" ] || { echo "cluster state $state not found" >&2; exit 2; }

log=$(mktemp)
RUST_LOG=${RUST_LOG:-warn} "$bin" serve --listen "127.0.0.1:${port}" --insecure-unauthenticated-extender --cluster-state "$state" 2>"$log" &
server=$!
stop() {
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    rm -f "$log"
}
trap stop EXIT

for _ in $(seq 1 100); do
    curl -skf "https://127.0.0.1:${port}/readyz" >/dev/null && break
    kill -0 "$server" 2>/dev/null || { echo "server exited:" >&2; cat "$log" >&2; exit 1; }
    sleep 0.1
done
answer=$(curl -sk "$url" -H 'Content-Type: application/json' --data-binary "@${BODY}")
case "$answer" in
    *'"uid"'*) ;;
    *) echo "unexpected answer from $url: $answer" >&2; exit 1 ;;
esac
echo "sanity answer: $answer"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"

echo
echo "== 1 connection, ${duration}s (latency percentiles)"
wrk -t1 -c1 -d"${duration}s" --latency -s scripts/wrk-post.lua "$url"
echo
echo "== 8 connections, ${threads} wrk threads, ${duration}s (throughput)"
wrk -t"${threads}" -c8 -d"${duration}s" --latency -s scripts/wrk-post.lua "$url"
