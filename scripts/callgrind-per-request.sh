#!/usr/bin/env bash
# Instructions per request (callgrind, whole server: TLS, HTTP, decision)
# for each row of load-extender.sh, one server run: zero the counters, send
# N requests (each a new pod uid) on one keep-alive connection, dump.
#   scripts/callgrind-per-request.sh [ROWS...]   (rows: healthz filter-500
#   prioritize-500 filter-all filter-nodes preempt; default all but nodes)
# Environment: BIN (target/release/kube-arbiter), N (20), STATE and BODIES
# (the cluster file and request bodies load-extender.sh wrote; default the
# bundled 5,000/150,000 ones), LIVE=1 to serve the cluster from
# examples/fake_apiserver.rs (FAKE_API, built in release) with the
# in-flight ledger on. Needs valgrind; the server loads under valgrind, so
# a full-size cluster takes minutes before the first row.
set -euo pipefail
bin=${BIN:-target/release/kube-arbiter}
cd "$(dirname "$0")/.."
S=${STATE:-target/synth-5000-150000.json}; L=${BODIES:-target/load-5000-150000}
n=${N:-20}
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
valgrind --tool=callgrind --callgrind-out-file="$w/cg.out" "$bin" serve --listen 127.0.0.1:$port \
    --insecure-unauthenticated-extender "${source_args[@]}" 2>"$w/log" &
pid=$!
trap 'kill $pid ${api:-} 2>/dev/null; rm -rf $w' EXIT
until curl -skf "https://127.0.0.1:$port/readyz" >/dev/null 2>&1; do sleep 2; kill -0 $pid || { cat $w/log; exit 1; }; done
rows=${*:-healthz filter-500 prioritize-500 filter-all preempt}
for row in $rows; do
  case $row in
    healthz) path=/healthz; tmpl= ;;
    filter-500|filter-all|filter-nodes) path=/scheduler/filter; tmpl=$L/load-$row-body.json.tmpl ;;
    prioritize-500) path=/scheduler/prioritize; tmpl=$L/load-$row-body.json.tmpl ;;
    preempt) path=/scheduler/preempt; tmpl=$L/load-preempt-body.json.tmpl ;;
  esac
  args=(); for i in $(seq $n); do
    [ $i -gt 1 ] && args+=(--next)
    args+=(-sk --http1.1 -o /dev/null "https://127.0.0.1:$port$path")
    if [ -n "$tmpl" ]; then sed "s/@UID@/cg-$row-$i-$RANDOM/g" "$tmpl" > "$w/b$i.json"; args+=(-H 'Content-Type: application/json' --data-binary "@$w/b$i.json"); fi
  done
  # one warm-up request (connection set-up is not per request)
  callgrind_control -z $pid >/dev/null
  curl "${args[@]}"
  callgrind_control -d "$row" $pid >/dev/null
  f=$(ls -t $w/cg.out.* | head -1)
  ir=$(grep -E '^(summary|totals):' "$f" | head -1 | awk '{print $2}')
  echo "$row: $(( ir / n )) instructions per request (N=$n, incl. 1 handshake/$n)"
  cp "$f" "target/callgrind-$row.out"
done
