#!/usr/bin/env bash
# Two (or more) builds of the server against each other on the same
# machine in the same minutes: each serves the cluster file, and every
# round sends each row's requests (wrk, one keep-alive connection, a new
# pod uid per request) to each build in turn, so the host's drift falls
# on all of them alike. Prints each round's p50 and the server's CPU per
# request (/proc/PID/stat, user + system).
#
#   scripts/ab-served.sh ROUNDS SECONDS "ROWS" BIN_A BIN_B [BIN...]
#
# Rows: healthz filter-500 prioritize-500 filter-all preempt. STATE and
# BODIES: the cluster file and the bodies scripts/load-extender.sh wrote
# (default the bundled 5,000/150,000 ones). LIVE=1: every build serves
# the cluster in live mode instead, watching one examples/fake_apiserver.rs
# (FAKE_API, built in release) loaded with the file, with the in-flight
# ledger on: the deployed path. Needs wrk.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/client-tls.sh
[ $# -ge 5 ] || { echo "usage: scripts/ab-served.sh ROUNDS SECONDS \"ROWS\" BIN_A BIN_B [BIN...]" >&2; exit 2; }
rounds=$1 seconds=$2 rows=$3; shift 3
S=${STATE:-target/synth-5000-150000.json}; L=${BODIES:-target/load-5000-150000}
[ -s "$S" ] || { echo "$S is missing: run scripts/load-extender.sh once to write it" >&2; exit 2; }
command -v wrk >/dev/null || { echo "wrk is not installed: apt-get install -y wrk" >&2; exit 2; }
bins=("$@") pids=() ports=()
w=$(mktemp -d)
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$w"' EXIT
source_args=(--cluster-state "$S")
if [ -n "${LIVE:-}" ]; then
    ${FAKE_API:-target/release/examples/fake_apiserver} "$S" "$w/kubeconfig" >"$w/api.out" 2>"$w/api.log" &
    pids+=("$!")
    until grep -q '^ready$' "$w/api.out" 2>/dev/null; do
        kill -0 "${pids[0]}" 2>/dev/null || { cat "$w/api.log" >&2; exit 1; }
        sleep 0.5
    done
    source_args=(--kubeconfig "$w/kubeconfig")
fi
servers=()
for i in "${!bins[@]}"; do
    port=$((30000 + RANDOM % 20000))
    RUST_LOG=warn "${bins[$i]}" serve --listen "127.0.0.1:$port" --insecure-unauthenticated-extender \
        "${source_args[@]}" 2>"$w/server-$i.log" &
    servers+=("$!")
    pids+=("$!") ports+=("$port")
done
for i in "${!bins[@]}"; do
    until curl -skf "https://127.0.0.1:${ports[$i]}/readyz" >/dev/null 2>&1; do
        kill -0 "${servers[$i]}" 2>/dev/null || { cat "$w/server-$i.log" >&2; exit 1; }
        sleep 0.2
    done
done
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
for round in $(seq "$rounds"); do
    for row in $rows; do
        case $row in
            healthz) path=/healthz body= ;;
            filter-500|filter-all) path=/scheduler/filter body=$L/load-$row-body.json.tmpl ;;
            prioritize-500) path=/scheduler/prioritize body=$L/load-$row-body.json.tmpl ;;
            preempt) path=/scheduler/preempt body=$L/load-preempt-body.json.tmpl ;;
            *) echo "unknown row $row" >&2; exit 2 ;;
        esac
        script=()
        [ -n "$body" ] && script=(-s scripts/wrk-unique.lua)
        for i in "${!bins[@]}"; do
            before=$(ticks "${servers[$i]}")
            report=$(BODY=$body wrk -t1 -c1 -d"${seconds}s" --latency "${script[@]}" \
                "https://127.0.0.1:${ports[$i]}$path")
            after=$(ticks "${servers[$i]}")
            requests=$(awk '/requests in/ {print $1}' <<<"$report")
            p50=$(awk '$1 == "50%" {print $2}' <<<"$report")
            cpu=$(( (after - before) * 1000000 / hz / requests ))
            echo "round $round  $row  ${bins[$i]}  p50 $p50  cpu ${cpu} µs/request  ($requests requests)"
        done
    done
done
