#!/usr/bin/env bash
# What one request of each load-extender.sh row costs the server, on one
# keep-alive connection, N requests each with a new pod uid:
#   cpu           the server threads' on-CPU time (user + kernel, from
#                 /proc/PID/task/*/schedstat): steadier than wall time on a
#                 busy machine;
#   instructions  callgrind's count over the whole server (TLS, HTTP,
#                 decision), the same on every machine; the one TLS
#                 handshake is spread over the N requests, and each row's
#                 profile is kept as target/callgrind-ROW.out.
#
#   scripts/per-request.sh cpu|instructions [ROWS...]
#
# Rows: healthz filter-500 prioritize-500 filter-all filter-nodes preempt
# (default: all but filter-nodes; filter-nodes is measured after one
# unmeasured request has filled the node cache). Environment: BIN
# (target/release/kube-arbiter), N (cpu 200, instructions 20), STATE and
# BODIES (the cluster file and request bodies load-extender.sh wrote;
# default the bundled 5,000/150,000 ones), LIVE=1 to serve the cluster from
# examples/fake_apiserver.rs (FAKE_API, built in release) with the
# in-flight ledger on. `instructions` needs valgrind; the server then loads
# under valgrind, which takes minutes at full size.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/client-tls.sh
measure=${1:-}
case $measure in
    cpu) n=${N:-200} ;;
    instructions) n=${N:-20} ;;
    *) echo "usage: scripts/per-request.sh cpu|instructions [ROWS...]" >&2; exit 2 ;;
esac
shift
bin=${BIN:-target/release/kube-arbiter}
S=${STATE:-target/synth-5000-150000.json}; L=${BODIES:-target/load-5000-150000}
[ -s "$S" ] || { echo "$S is missing: run scripts/load-extender.sh once to write it" >&2; exit 2; }
w=$(mktemp -d)
port=$((30000 + RANDOM % 20000))
source_args=(--cluster-state "$S")
if [ -n "${LIVE:-}" ]; then
    ${FAKE_API:-target/release/examples/fake_apiserver} "$S" "$w/kubeconfig" >"$w/api.out" 2>"$w/api.log" &
    api=$!
    until grep -q '^ready$' "$w/api.out" 2>/dev/null; do sleep 0.5; done
    source_args=(--kubeconfig "$w/kubeconfig")
fi
runner=()
[ "$measure" = instructions ] && runner=(valgrind --tool=callgrind --callgrind-out-file="$w/cg.out")
"${runner[@]}" "$bin" serve --listen "127.0.0.1:$port" --insecure-unauthenticated-extender \
    "${source_args[@]}" 2>"$w/log" &
pid=$!
trap 'kill $pid ${api:-} 2>/dev/null; rm -rf "$w"' EXIT
until curl -skf "https://127.0.0.1:$port/readyz" >/dev/null 2>&1; do
    sleep 0.5
    kill -0 $pid 2>/dev/null || { cat "$w/log" >&2; exit 1; }
done
cpu_ns() { cat /proc/$pid/task/*/schedstat | awk '{s+=$1} END {printf "%.0f", s}'; }
for row in ${*:-healthz filter-500 prioritize-500 filter-all preempt}; do
    case $row in
        healthz) path=/healthz; tmpl= ;;
        filter-500|filter-all|filter-nodes) path=/scheduler/filter; tmpl=$L/load-$row-body.json.tmpl ;;
        prioritize-500) path=/scheduler/prioritize; tmpl=$L/load-$row-body.json.tmpl ;;
        preempt) path=/scheduler/preempt; tmpl=$L/load-preempt-body.json.tmpl ;;
        *) echo "unknown row $row" >&2; exit 2 ;;
    esac
    # The 27 MB Nodes-mode body: a twentieth as many, after one request
    # that fills the node cache (what every request after the first finds).
    m=$n; [ "$row" = filter-nodes ] && m=$((n / 20 + 1))
    if [ "$row" = filter-nodes ]; then
        sed "s/@UID@/per-$row-warm-$RANDOM/g" "$tmpl" >"$w/warm.json"
        curl -sk --http1.1 -o /dev/null "https://127.0.0.1:$port$path" \
            -H 'Content-Type: application/json' --data-binary "@$w/warm.json"
    fi
    args=()
    for i in $(seq "$m"); do
        [ "$i" -gt 1 ] && args+=(--next)
        args+=(-sk --http1.1 -o /dev/null "https://127.0.0.1:$port$path")
        if [ -n "$tmpl" ]; then
            sed "s/@UID@/per-$row-$i-$RANDOM/g" "$tmpl" >"$w/b$i.json"
            args+=(-H 'Content-Type: application/json' --data-binary "@$w/b$i.json")
        fi
    done
    if [ "$measure" = cpu ]; then
        c0=$(cpu_ns); curl "${args[@]}"; c1=$(cpu_ns)
        echo "$row: $(((c1 - c0) / m / 1000)) µs server CPU per request (N=$m)"
    else
        callgrind_control -z $pid >/dev/null 2>&1
        curl "${args[@]}"
        callgrind_control -d "$row" $pid >/dev/null 2>&1
        f=$(ls -t "$w"/cg.out.* | head -n 1)
        ir=$(grep -E '^(summary|totals):' "$f" | head -n 1 | awk '{print $2}')
        echo "$row: $((ir / m)) instructions per request (N=$m, the handshake spread over them)"
        cp "$f" "target/callgrind-$row.out"
    fi
done
