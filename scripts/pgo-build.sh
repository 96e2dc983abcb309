#!/usr/bin/env bash
# The release binary built with profile-guided optimisation (PGO), the
# build the Dockerfile ships: an instrumented build serves the bundled
# synthetic cluster under scripts/load-extender.sh (every verb, file and
# live mode, admission), and the profile it writes guides the final build.
# Why: the served decisions run with cold caches, and a profile lets the
# compiler lay out hot code together (docs/extender-performance.md,
# "The build").
#
#   scripts/pgo-build.sh      → target/pgo/release/kube-arbiter
#
# Needs what load-extender.sh needs (wrk, curl, python3) and rustup's
# llvm-tools component, added here when missing. Two release builds of the
# binary, the examples load-extender.sh builds (once) and a minute of
# training: 22 minutes on 2 cores with the examples already built, about
# 30 from nothing. TRAIN_SECONDS (default 2) is each load row's time. The
# profile is kept as target/pgo.profdata, the training's report as
# target/pgo-train.log.
set -euo pipefail
cd "$(dirname "$0")/.."

host=$(rustc -vV | sed -n 's/^host: //p')
profdata=$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata
if [ ! -x "$profdata" ]; then
    rustup component add llvm-tools
fi
[ -x "$profdata" ] || { echo "no llvm-profdata at $profdata after 'rustup component add llvm-tools'" >&2; exit 1; }
for tool in wrk curl python3; do
    command -v "$tool" >/dev/null || { echo "$tool is missing (Debian: apt-get install -y wrk curl python3)" >&2; exit 1; }
done

raw=$PWD/target/pgo-raw
rm -rf "$raw" target/pgo.profdata
mkdir -p "$raw"

echo "==> instrumented build (target/pgo-generate)"
RUSTFLAGS="-Cprofile-generate=$raw" CARGO_TARGET_DIR=target/pgo-generate \
    cargo build --release --locked --bin kube-arbiter

echo "==> training: the bundled cluster under scripts/load-extender.sh"
# Each server writes its profile when SIGTERM stops it; %p keeps the file
# server's and the live server's apart.
LLVM_PROFILE_FILE="$raw/%p-%m.profraw" BIN=target/pgo-generate/release/kube-arbiter \
    SHAPE=bundled FLOOR=0 scripts/load-extender.sh "${TRAIN_SECONDS:-2}" >target/pgo-train.log 2>&1 ||
    { echo "training failed; its report:" >&2; tail -n 30 target/pgo-train.log >&2; exit 1; }
compgen -G "$raw/*.profraw" >/dev/null ||
    { echo "training wrote no profile under $raw" >&2; exit 1; }
"$profdata" merge -o target/pgo.profdata "$raw"/*.profraw

echo "==> optimised build (target/pgo)"
RUSTFLAGS="-Cprofile-use=$PWD/target/pgo.profdata" CARGO_TARGET_DIR=target/pgo \
    cargo build --release --locked --bin kube-arbiter

echo "==> the optimised build answers as the instrumented one"
# A profile changes code layout and inlining, never an answer: every load
# body (one fixed pod uid) and an admission review must come back as the
# same bytes from both builds.
work=$(mktemp -d) pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait; rm -rf "$work"' EXIT
ports=(18461 18462)
for i in 0 1; do
    bin=target/pgo-generate/release/kube-arbiter
    [ "$i" = 1 ] && bin=target/pgo/release/kube-arbiter
    LLVM_PROFILE_FILE="$work/check-%p.profraw" RUST_LOG=warn "$bin" serve --listen "127.0.0.1:${ports[$i]}" \
        --insecure-unauthenticated-extender --cluster-state target/synth-5000-150000.json \
        2>"$work/server-$i.log" &
    pids+=("$!")
done
for i in 0 1; do
    until curl -skf "https://127.0.0.1:${ports[$i]}/readyz" >/dev/null; do
        kill -0 "${pids[$i]}" 2>/dev/null || { cat "$work/server-$i.log" >&2; exit 1; }
        sleep 0.2
    done
done
checks=(filter-500:/scheduler/filter prioritize-500:/scheduler/prioritize filter-all:/scheduler/filter
    preempt:/scheduler/preempt filter-nodes:/scheduler/filter admission:/admission/priority)
for check in "${checks[@]}"; do
    row=${check%%:*} path=${check#*:}
    if [ "$row" = admission ]; then
        cp examples/requests/admit-create-default-class.json "$work/body.json"
    else
        sed 's/@UID@/pgo-check/' "target/load-5000-150000/load-$row-body.json.tmpl" >"$work/body.json"
    fi
    for i in 0 1; do
        curl -sk "https://127.0.0.1:${ports[$i]}$path" -H 'Content-Type: application/json' \
            --data-binary "@$work/body.json" -o "$work/answer-$i.json"
    done
    [ -s "$work/answer-0.json" ] && cmp -s "$work/answer-0.json" "$work/answer-1.json" ||
        { echo "$row: the optimised build answers differently (or not at all)" >&2; exit 1; }
    echo "  $row: same $(wc -c <"$work/answer-1.json") bytes"
done
echo "target/pgo/release/kube-arbiter"
