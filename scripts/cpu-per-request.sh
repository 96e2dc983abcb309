#!/usr/bin/env bash
# Server CPU time per request (sum of the server threads' on-CPU time from
# /proc/PID/task/*/schedstat, user + kernel), each row N requests with a new
# pod uid on one keep-alive connection. Robust to a busy machine in a way
# wall time is not.
#   scripts/cpu-per-request.sh [ROWS...]   (rows as callgrind-per-request.sh)
# Environment: BIN, N (200), STATE, BODIES, LIVE=1, FAKE_API, EXTRA (more
# serve flags), as in scripts/callgrind-per-request.sh.
set -euo pipefail
bin=${BIN:-target/release/kube-arbiter}
cd "$(dirname "$0")/.."
S=${STATE:-target/synth-5000-150000.json}; L=${BODIES:-target/load-5000-150000}
n=${N:-200}
w=$(mktemp -d)
port=$((30000 + RANDOM % 20000))
source_args=(--cluster-state "$S")
if [ -n "${LIVE:-}" ]; then
  # live mode (the in-flight ledger on): the fake API server serves the same state
  ${FAKE_API:-target/release/examples/fake_apiserver} "$S" "$w/kubeconfig" > "$w/api.out" 2>"$w/api.log" &
  api=$!
  until grep -q '^ready$' "$w/api.out" 2>/dev/null; do sleep 0.5; done
  source_args=(--kubeconfig "$w/kubeconfig")
fi
"$bin" serve --listen 127.0.0.1:$port --insecure-unauthenticated-extender "${source_args[@]}" ${EXTRA:-} 2>"$w/log" &
pid=$!
trap 'kill $pid ${api:-} 2>/dev/null; rm -rf $w' EXIT
until curl -skf "https://127.0.0.1:$port/readyz" >/dev/null 2>&1; do sleep 0.2; kill -0 $pid || { cat $w/log; exit 1; }; done
cpu() { cat /proc/$pid/task/*/schedstat | awk '{s+=$1} END {printf "%.0f", s}'; }
rows=${*:-healthz filter-500 prioritize-500 filter-all preempt}
for row in $rows; do
  case $row in
    healthz) path=/healthz; tmpl= ;;
    filter-500|filter-all|filter-nodes) path=/scheduler/filter; tmpl=$L/load-$row-body.json.tmpl ;;
    prioritize-500) path=/scheduler/prioritize; tmpl=$L/load-$row-body.json.tmpl ;;
    preempt) path=/scheduler/preempt; tmpl=$L/load-preempt-body.json.tmpl ;;
  esac
  m=$n; [ $row = filter-nodes ] && m=$(( n / 20 + 1 ))
  args=(); for i in $(seq $m); do
    [ $i -gt 1 ] && args+=(--next)
    args+=(-sk --http1.1 -o /dev/null "https://127.0.0.1:$port$path")
    if [ -n "$tmpl" ]; then sed "s/@UID@/cpu-$row-$i-$RANDOM/g" "$tmpl" > "$w/b$i.json"; args+=(-H 'Content-Type: application/json' --data-binary "@$w/b$i.json"); fi
  done
  c0=$(cpu); curl "${args[@]}"; c1=$(cpu)
  echo "$row: $(( (c1 - c0) / m / 1000 )) µs server CPU per request (N=$m)"
done
