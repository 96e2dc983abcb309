#!/usr/bin/env bash
# Measure how long `kube-arbiter serve --cluster-state F` takes to become
# ready, and its peak memory, on a synthetic cluster.
#   scripts/load-time.sh [NODES] [PODS] [--verbose]
set -euo pipefail
nodes=${1:-5000}; pods=${2:-150000}; extra=${3:-}
cd "$(dirname "$0")/.."
cargo build --release --quiet --example synth_cluster --bin kube-arbiter
file=target/synth-$nodes-$pods${extra:+-verbose}.json
[ -s "$file" ] || target/release/examples/synth_cluster "$nodes" "$pods" $extra > "$file"
echo "file: $file ($(du -m "$file" | cut -f1) MB)"
port=$((20000 + RANDOM % 20000))
start=$(date +%s.%N)
target/release/kube-arbiter serve --insecure-unauthenticated-extender --cluster-state "$file" --listen 127.0.0.1:$port --log-format json \
  > target/load-time.log 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
until curl -ksf "https://127.0.0.1:$port/readyz" >/dev/null; do
  kill -0 $pid 2>/dev/null || { echo "server exited:"; cat target/load-time.log; exit 1; }
  sleep 0.02
done
end=$(date +%s.%N)
python3 -c "print(f\"ready after: {$end - $start:.2f} s\")"
grep -E 'VmHWM|VmRSS' /proc/$pid/status
