#!/usr/bin/env bash
# End-to-end latency of /scheduler/filter and /scheduler/prioritize over
# TLS in NodeNames mode (nodeCacheCapable), and of /scheduler/preempt with
# 200 candidate nodes (MetaVictims), loopback only, against the
# release binary serving a synthetic 5,000-node / 150,000-pod cluster:
# one keep-alive connection, as one kube-scheduler calls its extender.
#
#   scripts/load-extender.sh [DURATION] [NODES] [PODS]
#
# Builds the release binary and the synth_cluster example, writes the
# cluster to target/synth-NODES-PODS.json once (about 250 MB at full size)
# and the request bodies (scripts/filter_body.py). Needs wrk (Debian
# package `wrk`), curl and python3.
set -euo pipefail
cd "$(dirname "$0")/.."

duration=${1:-10}; nodes=${2:-5000}; pods=${3:-150000}
port=${PORT:-18444}
command -v wrk >/dev/null || { echo "wrk is not installed: apt-get install -y wrk" >&2; exit 2; }
cargo build --release --quiet --example synth_cluster --bin kube-arbiter
state=target/synth-$nodes-$pods.json
[ -s "$state" ] || target/release/examples/synth_cluster "$nodes" "$pods" > "$state"
python3 scripts/filter_body.py "$state" target

log=$(mktemp)
RUST_LOG=${RUST_LOG:-warn} target/release/kube-arbiter serve --listen "127.0.0.1:${port}" \
    --cluster-state "$state" 2>"$log" &
server=$!
stop() {
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    rm -f "$log"
}
trap stop EXIT
until curl -skf "https://127.0.0.1:${port}/readyz" >/dev/null; do
    kill -0 "$server" 2>/dev/null || { echo "server exited:" >&2; cat "$log" >&2; exit 1; }
    sleep 0.1
done

for verb in filter prioritize preempt; do
    url="https://127.0.0.1:${port}/scheduler/${verb}"
    export BODY=target/load-${verb}-body.json
    curl -sk "$url" -H 'Content-Type: application/json' --data-binary "@${BODY}" \
        -o target/load-${verb}-answer.json
    python3 - "$verb" target/load-${verb}-answer.json <<'PY'
import json, sys
verb, answer = sys.argv[1], json.load(open(sys.argv[2]))
if verb == "filter":
    if answer.get("Error"):
        sys.exit(f"filter error: {answer['Error']}")
    print(f"filter: {len(answer['NodeNames'])} feasible, {len(answer['FailedNodes'])} failed, "
          f"{len(answer['FailedAndUnresolvableNodes'])} unresolvable")
elif verb == "prioritize":
    scores = [h["Score"] for h in answer]
    print(f"prioritize: {len(scores)} scores, distinct {sorted(set(scores))}")
else:
    nodes = answer["NodeNameToMetaVictims"]
    victims = sum(len(v["Pods"]) for v in nodes.values())
    print(f"preempt: {len(nodes)} nodes where preemption helps, {victims} victims")
PY
    echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "== ${verb}: 1 connection, ${duration}s"
    wrk -t1 -c1 -d"${duration}s" --latency -s scripts/wrk-post.lua "$url"
done
