#!/usr/bin/env bash
# End-to-end latency of the extender verbs over TLS, loopback only, against
# the release binary serving a synthetic 5,000-node / 150,000-pod cluster,
# each next to /healthz on the same server in the same run (the floor: TLS,
# HTTP and the machine's mood), printed as a ratio table at the end.
#
#   scripts/load-extender.sh [DURATION] [NODES] [PODS]
#   SHAPE=second scripts/load-extender.sh [DURATION] [NODES] [PODS]
#
# One keep-alive connection per verb, as one kube-scheduler calls its
# extender; every request carries a new pod uid (scripts/wrk-unique.lua), so
# nothing is answered from per-pod state prepared by an earlier request,
# except in the `filter+prioritize` row, which sends kube-scheduler's pair
# for each pod (filter, then prioritize of the same pod) and reports the
# mean time per pod. Admission and healthz are also driven over 8
# connections for throughput, the review both pretty-printed (the example
# file) and compact (as kube-apiserver sends it). The request bodies come
# from scripts/filter_body.py (docs/benchmarks.md, "Cluster shapes").
#
# The rows above serve the cluster from the state file (--cluster-state),
# where the in-flight ledger is off. The `live-` rows send the same bodies
# to a second server in live mode, the way it is deployed: it watches
# examples/fake_apiserver.rs (the tests' fake API server, loaded with the
# same state file), so the ledger is on (role nextToInTreePlugins, the
# default). Each filter there also starts a new attempt for its pod, looks
# up the other pods in flight and records its pod with the feasible nodes;
# each prioritize records it again. The ledger is keyed by namespace and
# name, and every request is the same pod name with a new uid, so it holds
# that one pod: the others in flight are none, as for a kube-scheduler
# whose bindings show up in the watch before the next pod (nothing binds
# here; distinct names, never bound, would pile up until they time out,
# which no real scheduler does). So the rows measure the deployed path's
# decode and ledger bookkeeping, not admitting other pods' placements.
#
# Each verb row is also sent to its protocol floor (FLOOR=0 skips it):
# examples/floor_extender, the same server (TLS, HTTP, the scheduler
# routes' guard, body limit and middleware, the body read whole) answering
# the same request with the bytes kube-arbiter answered it, decided by
# nothing. What any extender pays for that call on this stack is the
# floor's p50; kube-arbiter's p50 above it is its decision. One floor
# server per row, on PORT+2 onwards.
#
# ROUNDS (default 1) runs every row that many times, the rows in turn within
# a round, and the table gives each row's median p50 over the rounds, as a
# multiple of healthz's median: on a shared 2-vCPU machine one healthz run
# alone moved between 0.08 and 0.13 ms.
#
# Environment: BIN (default: build target/release/kube-arbiter), PORT
# (18444; the live server listens on PORT+1), ROWS (space-separated subset
# of the rows below), EXAMPLES=debug to build the examples (synth_cluster,
# fake_apiserver) without --release, for a quick check on a small cluster,
# and the cluster's shape (docs/benchmarks.md, "Cluster shapes"):
#   SHAPE=bundled (default)  3 zones, 6-12 images per node; Deployments of
#       10-300 replicas over 50 namespaces: 30 % with a hard zone spread,
#       10 % each required hostname anti-affinity, preferred pod affinity
#       and required node affinity, 5 % GPU; a PDB on every 2nd.
#   SHAPE=second  10 zones, 20 images per node; Deployments of
#       100 replicas over 50 namespaces: 30 % with a hard zone spread, 10 %
#       with required hostname anti-affinity, the rest unconstrained; a PDB
#       on every 5th.
#   SYNTH_FLAGS  more synth_cluster flags over the shape, e.g.
#       "--spread-share 0.5 --pdb-every 1" (`synth_cluster --help` lists
#       --zones --namespaces --app-size --images-per-node --pdb-every and
#       the share of each constraint).
#   SYNTH  a synth_cluster binary to use (default: build the example).
#   CLIENT_TLS  go (default): the clients offer TLS 1.3 suites in Go's
#       order, as kube-scheduler does (AES-128-GCM); openssl: OpenSSL's own
#       (AES-256-GCM first). See scripts/client-tls.sh.
# Writes the cluster to target/synth-NODES-PODS.json (SHAPE=second:
# target/synth-second-NODES-PODS.json; SYNTH_FLAGS put their words in
# front of NODES) once, about 250 MB at full size, and the request bodies to
# target/load-NODES-PODS/ (named the same way). Needs wrk (Debian package
# `wrk`), curl and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/client-tls.sh

duration=${1:-10}; nodes=${2:-5000}; pods=${3:-150000}
port=${PORT:-18444}
live_port=$((port + 1))
shape=${SHAPE:-bundled}
case $shape in
    bundled) name=$nodes-$pods ;;
    second) name=second-$nodes-$pods ;;
    *) echo "SHAPE=$shape: unknown shape (bundled or second)" >&2; exit 2 ;;
esac
# SYNTH_FLAGS "--spread-share 0.5" names the files ...-spread-share-0.5-...
read -ra flags <<<"${SYNTH_FLAGS:-}"
words=""
for flag in "${flags[@]}"; do words+=${flag#--}-; done
name=$words$name
command -v wrk >/dev/null || { echo "wrk is not installed: apt-get install -y wrk" >&2; exit 2; }
if [ -z "${BIN:-}" ]; then
    cargo build --release --quiet --bin kube-arbiter
    BIN=target/release/kube-arbiter
fi
if [ "${EXAMPLES:-release}" = debug ]; then
    examples=(cargo build --quiet --example); examples_dir=target/debug/examples
else
    examples=(cargo build --release --quiet --example); examples_dir=target/release/examples
fi
# wanted ROW...: whether ROWS (default: all) selects any of them.
wanted() {
    local row
    for row in "$@"; do
        case " ${ROWS:-$row} " in *" $row "*) return 0 ;; esac
    done
    return 1
}
state=target/synth-$name.json
if [ ! -s "$state" ]; then
    if [ -z "${SYNTH:-}" ]; then
        "${examples[@]}" synth_cluster
        SYNTH=$examples_dir/synth_cluster
    fi
    "$SYNTH" "$nodes" "$pods" --shape "$shape" "${flags[@]}" > "$state.partial"
    mv "$state.partial" "$state"
fi
bodies=target/load-$name
[ -s "$bodies/load-preempt-body.json" ] || {
    mkdir -p "$bodies"
    python3 scripts/filter_body.py "$state" "$bodies"
}

log=$(mktemp); out=$(mktemp -d)
pids=()
stop() {
    local pid
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$log" "$out"
}
trap stop EXIT
# serve PORT LOG SOURCE...: start the server, wait until it is ready.
# wrk cannot present a client certificate, so the verbs are served to any
# loopback caller here; the certificate-name check it skips is one string
# comparison per request, after the handshake (keep-alive: one handshake).
serve() {
    local at=$1 serve_log=$2; shift 2
    RUST_LOG=${RUST_LOG:-warn} "$BIN" serve --listen "127.0.0.1:${at}" \
        --insecure-unauthenticated-extender "$@" 2>"$serve_log" &
    local pid=$!
    pids+=("$pid")
    until curl -skf "https://127.0.0.1:${at}/readyz" >/dev/null; do
        kill -0 "$pid" 2>/dev/null || { echo "server exited:" >&2; cat "$serve_log" >&2; exit 1; }
        sleep 0.1
    done
}
serve "$port" "$log" --cluster-state "$state"
file_base="https://127.0.0.1:${port}"
base=$file_base

live_rows=(live-filter-500 live-prioritize-500)
if wanted "${live_rows[@]}"; then
    "${examples[@]}" fake_apiserver
    "$examples_dir/fake_apiserver" "$state" "$out/kubeconfig" >"$out/api.out" 2>"$out/api.log" &
    api=$!
    pids+=("$api")
    until grep -q '^ready$' "$out/api.out"; do
        kill -0 "$api" 2>/dev/null || { echo "fake API server exited:" >&2; cat "$out/api.log" >&2; exit 1; }
        sleep 0.2
    done
    serve "$live_port" "$out/live.log" --kubeconfig "$out/kubeconfig"
fi
live_base="https://127.0.0.1:${live_port}"

# Sanity: each verb answers what the body is about.
check() {
    local verb=$1 body=$2 at=${3:-$file_base}
    curl -sk "$at/scheduler/$verb" -H 'Content-Type: application/json' \
        --data-binary "@$body" -o "$out/answer.json"
    python3 - "$verb" "$out/answer.json" <<'PY'
import json, sys
verb, answer = sys.argv[1], json.load(open(sys.argv[2]))
if verb == "filter":
    if answer.get("Error"):
        sys.exit(f"filter error: {answer['Error']}")
    names = answer["NodeNames"] if answer.get("NodeNames") is not None else answer["Nodes"]["items"]
    print(f"  filter: {len(names)} feasible, {len(answer['FailedNodes'])} failed, "
          f"{len(answer['FailedAndUnresolvableNodes'])} unresolvable")
elif verb == "prioritize":
    scores = [h["Score"] for h in answer]
    print(f"  prioritize: {len(scores)} scores, distinct {sorted(set(scores))}")
else:
    nodes = answer["NodeNameToMetaVictims"]
    victims = sum(len(v["Pods"]) for v in nodes.values())
    print(f"  preempt: {len(nodes)} nodes where preemption helps, {victims} victims")
PY
}
echo "sanity answers:"
check filter "$bodies/load-filter-500-body.json"
check prioritize "$bodies/load-prioritize-500-body.json"
check filter "$bodies/load-filter-all-body.json"
check preempt "$bodies/load-preempt-body.json"
check filter "$bodies/load-filter-nodes-body.json"
if wanted "${live_rows[@]}"; then
    echo "live mode:"
    check filter "$bodies/load-filter-500-body.json" "$live_base"
    check prioritize "$bodies/load-prioritize-500-body.json" "$live_base"
fi
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"

# The floor of each verb row: the row's answer (the body with a fixed uid,
# as kube-arbiter answers it) served back by floor_extender.
floor_rows=(filter-500 prioritize-500 filter-all preempt filter-nodes)
declare -A floor_port
if [ "${FLOOR:-1}" != 0 ] && wanted "${floor_rows[@]}"; then
    "${examples[@]}" floor_extender
    k=0
    for row in "${floor_rows[@]}"; do
        wanted "$row" || continue
        case $row in prioritize-*) verb=prioritize ;; preempt) verb=preempt ;; *) verb=filter ;; esac
        sed 's/@UID@/floor-answer/' "$bodies/load-$row-body.json.tmpl" > "$out/floor-body.json"
        curl -sfk "$file_base/scheduler/$verb" -H 'Content-Type: application/json' \
            --data-binary "@$out/floor-body.json" -o "$out/floor-$row.json"
        floor_port[$row]=$((port + 2 + k)); k=$((k + 1))
        "$examples_dir/floor_extender" "127.0.0.1:${floor_port[$row]}" "$out/floor-$row.json" \
            2>"$out/floor-$row.log" &
        pids+=("$!")
    done
    for row in "${!floor_port[@]}"; do
        tries=0
        until curl -skf "https://127.0.0.1:${floor_port[$row]}/healthz" >/dev/null; do
            tries=$((tries + 1))
            [ "$tries" -lt 100 ] || { echo "floor_extender ($row) did not start:" >&2; cat "$out/floor-$row.log" >&2; exit 1; }
            sleep 0.1
        done
        # Sanity: the floor answers the row's bytes.
        curl -sk "https://127.0.0.1:${floor_port[$row]}/scheduler/x" -H 'Content-Type: application/json' \
            --data-binary '{}' | cmp -s - "$out/floor-$row.json" \
            || { echo "floor_extender ($row) does not answer the row's bytes" >&2; exit 1; }
    done
fi

# run NAME CONNECTIONS PATH [BODY [PAIR]]: one timed run (wrk, or
# post-timed.py for the Nodes-mode row), output in $out/NAME.ROUND, and for
# a verb row the same against its floor, in $out/NAME-floor.ROUND.
run() {
    local name=$1 conns=$2 path=$3 body=${4:-} pair=${5:-}
    case " ${ROWS:-$name} " in *" $name "*) ;; *) return 0 ;; esac
    local threads=1 script=()
    [ "$conns" -gt 1 ] && threads=2
    if [ -n "$body" ]; then
        script=(-s scripts/wrk-unique.lua)
        [ "${body%.json}" != "$body" ] && script=(-s scripts/wrk-post.lua)
    fi
    # time URL OUT: the row's requests to URL, wrk's report in OUT. Bodies
    # of megabytes are timed by scripts/post-timed.py: wrk restarts a
    # request's clock whenever a TLS write waits for the socket.
    time_row() {
        if [ "$name" = filter-nodes ]; then
            python3 scripts/post-timed.py "$1" "$body" "$duration" | tee "$2"
        else
            BODY=$body PAIR=$pair wrk -t"$threads" -c"$conns" -d"${duration}s" --latency \
                "${script[@]}" "$1" | tee "$2"
        fi
    }
    echo "== $name: $conns connection(s), ${duration}s, round $round"
    time_row "$base$path" "$out/$name.$round"
    local floor=${floor_port[$name]:-}
    if [ -n "$floor" ] && [ "$base" = "$file_base" ]; then
        echo "== $name-floor: the same requests to floor_extender, round $round"
        time_row "https://127.0.0.1:${floor}$path" "$out/$name-floor.$round"
    fi
}

t=$bodies
python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1])), separators=(",", ":")), end="")' \
    examples/requests/admit-create-default-class.json > "$out/admit-compact.json"
for round in $(seq "${ROUNDS:-1}"); do
    base=$file_base
    run healthz 1 /healthz
    run filter-500 1 /scheduler/filter "$t/load-filter-500-body.json.tmpl"
    run prioritize-500 1 /scheduler/prioritize "$t/load-prioritize-500-body.json.tmpl"
    run filter+prioritize 1 /scheduler/prioritize "$t/load-prioritize-500-body.json.tmpl" /scheduler/filter
    run filter-all 1 /scheduler/filter "$t/load-filter-all-body.json.tmpl"
    run preempt 1 /scheduler/preempt "$t/load-preempt-body.json.tmpl"
    run filter-nodes 1 /scheduler/filter "$t/load-filter-nodes-body.json.tmpl"
    run healthz-8 8 /healthz
    run admission-8 8 /admission/priority examples/requests/admit-create-default-class.json
    # The same review compact, as kube-apiserver sends it.
    run admission-8-compact 8 /admission/priority "$out/admit-compact.json"
    base=$live_base
    run live-filter-500 1 /scheduler/filter "$t/load-filter-500-body.json.tmpl"
    run live-prioritize-500 1 /scheduler/prioritize "$t/load-prioritize-500-body.json.tmpl"
done
if wanted "${live_rows[@]}"; then
    # The fake API server lets its metrics-reader token read /metrics.
    echo "live ledger after its rows: $(curl -sk -H 'Authorization: Bearer metrics-reader-token' \
        "$live_base/metrics" | grep -E '^kube_arbiter_in_flight_pods ' || echo 'gauge not found')"
fi

python3 - "$out" <<'PY'
import os, re, sys
out = sys.argv[1]
UNIT = {"us": 1e-3, "ms": 1.0, "s": 1e3}

def median(values):
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2

def parse(name):
    """Median p50 (ms) and median requests/s of NAME's runs, one per round."""
    p50s, rates = [], []
    for entry in sorted(os.listdir(out)):
        if entry.rsplit(".", 1)[0] != name:
            continue
        text = open(os.path.join(out, entry)).read()
        p50 = re.search(r"^\s+50%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
        rps = re.search(r"^Requests/sec:\s+([\d.]+)", text, re.M)
        p50s.append(float(p50.group(1)) * UNIT[p50.group(2)] if p50 else None)
        rates.append(float(rps.group(1)) if rps else None)
    if not p50s:
        return None
    return median(p50s), median(rates)

verbs = ["filter-500", "prioritize-500", "filter-all", "preempt", "filter-nodes"]
rows = {name: parse(name) for name in ["healthz", "filter+prioritize", "healthz-8",
        "admission-8", "admission-8-compact", "live-filter-500", "live-prioritize-500"]
        + verbs + [v + "-floor" for v in verbs]}
base = rows["healthz"]
rounds = int(os.environ.get("ROUNDS") or 1)
if rounds > 1:
    print(f"\np50: the median of {rounds} rounds")
print("\n| request | p50 | × healthz p50 | floor p50 | floor × healthz | above floor |")
print("|---|---|---|---|---|---|")
if base:
    print(f"| healthz | {base[0]:.3f} ms | 1 | | | |")
for name in ["filter-500", "live-filter-500", "prioritize-500", "live-prioritize-500",
             "filter-all", "preempt", "filter-nodes"]:
    r, f = rows[name], rows.get(name + "-floor")
    if r and base:
        cells = ["", "", ""]
        if f:
            cells = [f"{f[0]:.3f} ms", f"{f[0] / base[0]:.1f}×", f"{r[0] - f[0]:.3f} ms"]
        print(f"| {name} | {r[0]:.3f} ms | {r[0] / base[0]:.1f}× | " + " | ".join(cells) + " |")
pair = rows["filter+prioritize"]
if pair and base:
    per_pod = 2000.0 / pair[1]
    print(f"| filter+prioritize, mean per pod | {per_pod:.3f} ms | {per_pod / base[0]:.1f}× |")
h8 = rows["healthz-8"]
for name, body in [("admission-8", "pretty-printed"), ("admission-8-compact", "compact")]:
    a8 = rows[name]
    if h8 and a8:
        print(f"throughput, 8 connections: admission ({body}) {a8[1]:.0f}/s, "
              f"healthz {h8[1]:.0f}/s, ratio {a8[1] / h8[1]:.2f}×")
PY
