#!/usr/bin/env bash
# Soak test of the release binary, loopback only: sustained load while the
# serving certificate rotates and the cluster view changes, with resident
# memory sampled throughout.
#
#   scripts/soak.sh [MINUTES]            (default 10)
#
# What runs for MINUTES:
# - wrk: /scheduler/filter (NodeNames mode, every node) on 2 connections
#   and /admission/priority on 2 connections, keep-alive;
# - a client opening a new TLS connection every 50 ms, verified against
#   the CA (curl --cacert);
# - every ROTATE seconds a new serving certificate, written the way the
#   kubelet updates a Secret volume: tls.crt -> ..data/tls.crt, and
#   ..data a symlink renamed over by one pointing at a new timestamped
#   directory; the old directory is then removed. The served serial is
#   checked before each rotation;
# - file mode: every REWRITE seconds the state file is replaced (two
#   synthetic clusters in turn), and once, half way, by a truncated file,
#   which must be refused with the last good view kept;
# - live mode (MODE=live): no state file; an in-process fake API server
#   (examples/soak_apiserver.rs) serves the synthetic cluster and
#   streams EVENTS pod events per second.
# It prints requests, errors, rotations and view changes seen, RSS per
# minute, and exits 1 on any failed request, a missed rotation or view
# change, or RSS at the end above GROWTH x RSS after the first minute.
#
# Environment: MODE (file|live), NODES (1000), PODS (30000), ROTATE (20),
# REWRITE (30), EVENTS (200), GROWTH (1.15), PORT (random), BIN (a prebuilt
# binary instead of building target/release/kube-arbiter), KEEP=1 keeps
# the work directory. Needs wrk, curl, openssl, python3.
set -euo pipefail
cd "$(dirname "$0")/.."

minutes=${1:-10}
mode=${MODE:-file}
nodes=${NODES:-1000}; pods=${PODS:-30000}
rotate_every=${ROTATE:-20}; rewrite_every=${REWRITE:-30}
events=${EVENTS:-200}; growth=${GROWTH:-1.15}
port=${PORT:-$((20000 + RANDOM % 20000))}
case "$minutes" in ''|*[!0-9]*|0) echo "usage: scripts/soak.sh [MINUTES>0]" >&2; exit 2 ;; esac
case "$mode" in file|live) ;; *) echo "MODE must be file or live" >&2; exit 2 ;; esac
for tool in wrk curl openssl python3; do
    command -v "$tool" >/dev/null || { echo "$tool is not installed (Debian: apt-get install -y $tool)" >&2; exit 2; }
done
seconds=$((minutes * 60))

if [ -n "${BIN:-}" ]; then
    bin=$BIN
else
    cargo build --release --quiet --bin kube-arbiter
    bin=target/release/kube-arbiter
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/kube-arbiter-soak.XXXXXX")
pids=()
cleanup() {
    local status=$?
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    if [ "${KEEP:-0}" = 1 ] || [ "$status" != 0 ]; then
        echo "work directory kept: $work"
    else
        rm -rf "$work"
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- certificates: a CA, and serving pairs with known serials -------------
tls=$work/tls
mkdir -p "$tls"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=soak CA" -keyout "$work/ca.key" -out "$work/ca.crt" 2>/dev/null
serial=0
# Write pair number $serial into the Secret volume and swap ..data to it.
issue_and_swap() {
    serial=$((serial + 1))
    local version
    version="..$(date -u +%Y_%m_%d_%H_%M_%S).$serial"
    mkdir "$tls/$version"
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
        -keyout "$tls/$version/tls.key" -out "$work/csr.pem" 2>/dev/null
    openssl x509 -req -in "$work/csr.pem" -CA "$work/ca.crt" -CAkey "$work/ca.key" \
        -set_serial "$serial" -days 1 -out "$tls/$version/tls.crt" \
        -extfile <(printf 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n') 2>/dev/null
    local old
    old=$(readlink "$tls/..data" 2>/dev/null || true)
    ln -s "$version" "$tls/..data_tmp"
    mv -T "$tls/..data_tmp" "$tls/..data"
    [ -n "$old" ] && rm -rf "${tls:?}/$old"
    return 0
}
issue_and_swap
ln -s ..data/tls.crt "$tls/tls.crt"
ln -s ..data/tls.key "$tls/tls.key"

# --- the cluster source --------------------------------------------------
state=$work/cluster.json
if [ "$mode" = file ]; then
    # Two clusters of the same size with different pods, swapped in turn.
    cluster_a=target/synth-$nodes-$pods.json
    cluster_b=target/synth-$nodes-$((pods + nodes)).json
    if [ ! -s "$cluster_a" ] || [ ! -s "$cluster_b" ]; then
        cargo build --release --quiet --example synth_cluster 2>/dev/null ||
            cargo build --release --quiet --example synth_cluster --features synth
    fi
    [ -s "$cluster_a" ] || target/release/examples/synth_cluster "$nodes" "$pods" > "$cluster_a"
    [ -s "$cluster_b" ] || target/release/examples/synth_cluster "$nodes" $((pods + nodes)) > "$cluster_b"
    cp "$cluster_a" "$state"
    source_args=(--cluster-state "$state")
else
    # Run the example binary itself (not through cargo), so the trap can stop it.
    cargo build --release --quiet --example soak_apiserver
    harness=target/release/examples/soak_apiserver
    kubeconfig=$work/kubeconfig
    SOAK_SECONDS=$((seconds + 120)) SOAK_NODES=$nodes SOAK_PODS=$pods SOAK_EVENTS=$events \
        SOAK_KUBECONFIG=$kubeconfig SOAK_STATE=$state \
        "$harness" > "$work/apiserver.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 1 1800); do
        [ -s "$kubeconfig" ] && break
        kill -0 "${pids[-1]}" 2>/dev/null || { echo "fake API server exited:" >&2; cat "$work/apiserver.log" >&2; exit 1; }
        sleep 0.5
    done
    [ -s "$kubeconfig" ] || { echo "fake API server did not start" >&2; exit 1; }
    source_args=(--kubeconfig "$kubeconfig")
fi
python3 scripts/filter_body.py "$state" "$work" >/dev/null
# NodeNames mode with every node of the cluster, as with nodeCacheCapable.
filter_body=$work/load-filter-all-body.json
[ -s "$filter_body" ] || { echo "scripts/filter_body.py wrote no $filter_body" >&2; exit 1; }

# --- the server ----------------------------------------------------------
# wrk cannot present a client certificate: the verbs are open on loopback.
# /metrics on the HTTPS port needs a bearer token in live mode: the soak
# reads it from the plain-HTTP metrics port on loopback instead.
metrics_port=$((port + 1))
RUST_LOG=${RUST_LOG:-warn} "$bin" serve --listen "127.0.0.1:$port" --insecure-unauthenticated-extender \
    --metrics-listen "127.0.0.1:$metrics_port" "${source_args[@]}" \
    --tls-cert "$tls/tls.crt" --tls-key "$tls/tls.key" > "$work/server.log" 2>&1 &
server=$!
pids+=("$server")
base=https://localhost:$port
verified=(curl -sf --max-time 5 --cacert "$work/ca.crt" --resolve "localhost:$port:127.0.0.1")
for _ in $(seq 1 1200); do
    "${verified[@]}" -o /dev/null "$base/readyz" && break
    kill -0 "$server" 2>/dev/null || { echo "server exited:" >&2; cat "$work/server.log" >&2; exit 1; }
    sleep 0.1
done
"${verified[@]}" -o /dev/null "$base/readyz" || { echo "server not ready after 120 s" >&2; exit 1; }

metric() { # NAME [LABELS]: the value of one sample on /metrics (0 if absent)
    { curl -sf --max-time 5 "http://127.0.0.1:$metrics_port/metrics" || true; } | awk -v name="$1${2:-}" '$1 == name { v = $2 } END { print v + 0 }'
}
served_serial() {
    timeout 5 openssl s_client -connect "127.0.0.1:$port" -servername localhost \
        -CAfile "$work/ca.crt" </dev/null 2>/dev/null |
        openssl x509 -noout -serial 2>/dev/null | sed 's/serial=//' || true
}
rss_mib() { awk '/^VmRSS:/ { printf "%.0f", $2 / 1024 }' "/proc/$server/status"; }

pods_metric='{kind="Pod"}'
reloads_start=$(metric kube_arbiter_view_reloads_total)
echo "mode $mode, $nodes nodes, $pods pods, $minutes min, port $port, machine $(nproc) cores"

# --- load ----------------------------------------------------------------
BODY=$filter_body wrk -t1 -c2 -d"${seconds}s" --timeout 10s -s scripts/wrk-post.lua \
    "$base/scheduler/filter" > "$work/wrk-filter.txt" 2>&1 &
load=($!)
BODY=examples/requests/admit-create-default-class.json wrk -t1 -c2 -d"${seconds}s" --timeout 10s \
    -s scripts/wrk-post.lua "$base/admission/priority" > "$work/wrk-admission.txt" 2>&1 &
load+=($!)
echo "0 0" > "$work/tls-clients.txt"
(
    ok=0; failed=0; end=$((SECONDS + seconds))
    for _ in $(seq 1 $((seconds * 20))); do
        [ "$SECONDS" -lt "$end" ] || break
        if "${verified[@]}" -o /dev/null "$base/healthz"; then ok=$((ok + 1)); else failed=$((failed + 1)); fi
        echo "$ok $failed" > "$work/tls-clients.txt"
        sleep 0.05
    done
) &
load+=($!)
pids+=("${load[@]}")

# --- rotations, rewrites, samples: one tick a second ---------------------
rotations=0; rotations_seen=0; rewrites=0
rss_first=""; rss_last=0; failures=()
broken_refused="not written"
started=$SECONDS
echo "minute  RSS MiB"
for tick in $(seq 1 "$seconds"); do
    sleep $((started + tick - SECONDS > 0 ? started + tick - SECONDS : 0))
    kill -0 "$server" 2>/dev/null || { failures+=("server exited at ${tick}s"); break; }
    if [ $((tick % rotate_every)) -eq 0 ] && [ "$tick" -lt "$seconds" ]; then
        served=$(served_serial)
        if [ -n "$served" ] && [ $((16#$served)) -eq "$serial" ]; then
            rotations_seen=$((rotations_seen + 1))
        else
            failures+=("rotation to serial $serial not served at ${tick}s")
        fi
        issue_and_swap
        rotations=$((rotations + 1))
    fi
    if [ "$mode" = file ] && [ $((tick % rewrite_every)) -eq 0 ] && [ "$tick" -lt "$seconds" ]; then
        rewrites=$((rewrites + 1))
        if [ "$broken_refused" = "not written" ] && [ "$tick" -ge $((seconds / 2)) ]; then
            # Half way: a truncated file. The failure is counted, the pod
            # count in the view stays, the server stays ready.
            pods_before=$(metric kube_arbiter_view_objects "$pods_metric")
            failed_before=$(metric kube_arbiter_view_reload_failures_total)
            head -c 100000 "$state" > "$state.tmp" && mv "$state.tmp" "$state"
            sleep 3
            if [ "$(metric kube_arbiter_view_reload_failures_total)" = $((failed_before + 1)) ] &&
                [ "$pods_before" -gt 0 ] &&
                [ "$(metric kube_arbiter_view_objects "$pods_metric")" = "$pods_before" ] &&
                "${verified[@]}" -o /dev/null "$base/readyz"; then
                broken_refused=yes
            else
                broken_refused=no
                failures+=("the truncated state file was not refused cleanly")
            fi
        else
            next=$cluster_a; [ $((rewrites % 2)) -eq 1 ] && next=$cluster_b
            cp "$next" "$state.tmp" && mv "$state.tmp" "$state"
        fi
    fi
    if [ $((tick % 60)) -eq 0 ] || [ "$tick" -eq "$seconds" ]; then
        rss_last=$(rss_mib)
        [ -n "$rss_first" ] || rss_first=$rss_last
        printf '%6s  %s\n' "$(awk -v t="$tick" 'BEGIN { printf "%.1f", t / 60 }')" "$rss_last"
    fi
done
for pid in "${load[@]}"; do wait "$pid" 2>/dev/null || true; done

# --- verdict -------------------------------------------------------------
wrk_requests() { awk '/requests in/ { print $1 }' "$1"; }
wrk_errors() { # non-2xx/3xx answers plus socket errors
    awk '/Non-2xx/ { e += $NF } /Socket errors/ { gsub(/[^0-9 ]/, " "); for (i = 1; i <= NF; i++) e += $i } END { print e + 0 }' "$1"
}
filter_requests=$(wrk_requests "$work/wrk-filter.txt"); filter_errors=$(wrk_errors "$work/wrk-filter.txt")
admission_requests=$(wrk_requests "$work/wrk-admission.txt"); admission_errors=$(wrk_errors "$work/wrk-admission.txt")
read -r tls_ok tls_failed < "$work/tls-clients.txt"
tls_reloads=$(metric kube_arbiter_tls_reloads_total)
view_changes=$(( $(metric kube_arbiter_view_reloads_total) - reloads_start ))
echo
echo "requests: filter ${filter_requests:-0} (errors $filter_errors), admission ${admission_requests:-0}" \
    "(errors $admission_errors), new verified TLS connections $tls_ok (failed $tls_failed)"
echo "rotations: $rotations written, $rotations_seen checked served, tls_reloads_total $tls_reloads"
if [ "$mode" = file ]; then
    echo "state: $rewrites rewrites, view reloads seen $view_changes; truncated file refused: $broken_refused"
    [ "$view_changes" -ge $((rewrites - 1)) ] || failures+=("only $view_changes of $((rewrites - 1)) good rewrites loaded")
else
    echo "state: views published $view_changes, pod events applied $(metric kube_arbiter_view_events_total "$pods_metric")"
    [ "$view_changes" -gt 0 ] || failures+=("no live view change seen")
fi
ratio=$(awk -v a="$rss_first" -v b="$rss_last" 'BEGIN { printf "%.2f", b / a }')
echo "RSS: ${rss_first} MiB after the first minute, ${rss_last} MiB at the end: x$ratio (limit x$growth)"

[ -n "$filter_requests" ] && [ -n "$admission_requests" ] || failures+=("wrk did not report")
[ "$filter_errors" = 0 ] && [ "$admission_errors" = 0 ] && [ "$tls_failed" = 0 ] ||
    failures+=("failed requests")
[ "$tls_reloads" -ge "$rotations" ] || failures+=("$tls_reloads TLS reloads for $rotations rotations")
awk -v r="$ratio" -v g="$growth" 'BEGIN { exit !(r <= g) }' || failures+=("RSS grew x$ratio")
if [ "${#failures[@]}" -gt 0 ]; then
    printf 'FAILED: %s\n' "${failures[@]}"
    exit 1
fi
echo "OK"
