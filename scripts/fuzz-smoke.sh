#!/usr/bin/env bash
# Run every cargo-fuzz target briefly from its committed seeds.
#
#   scripts/fuzz-smoke.sh [TARGET...]     (FUZZ_SECONDS=30 per target)
#
# Needs a nightly toolchain (cargo-fuzz builds with -Z flags); without one
# it says so and exits 0. Installs cargo-fuzz if missing. A crash, panic,
# hang (> 10 s on one input) or build failure of any target exits 1; the
# failing input is left in fuzz/artifacts/<target>/ (replay it with
# `cargo +nightly fuzz run <target> <file>`). New inputs go to a temporary
# directory, so the committed corpus is never changed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

seconds=${FUZZ_SECONDS:-30}

if ! rustup toolchain list 2>/dev/null | grep -q nightly; then
    echo "fuzz smoke: SKIPPED, no nightly toolchain (install one with" \
        "'rustup toolchain install nightly' to run the fuzz targets)"
    exit 0
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi

# Release code with debug assertions and overflow checks; no sanitizer:
# the crate has no unsafe code, and panics are what we look for.
flags=(-O -a -s none)
cargo fetch --locked --manifest-path fuzz/Cargo.toml
started=$SECONDS
cargo +nightly fuzz build "${flags[@]}"
echo "fuzz smoke: built the targets in $((SECONDS - started)) s"

if [ $# -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=()
for target in "${targets[@]}"; do
    mkdir -p "$work/$target" "fuzz/artifacts/$target"
    extra=()
    # Whole cluster files are slow to decode; a few KB reach every path.
    [ "$target" = cluster_state ] && extra=(-max_len=4096)
    echo "fuzz smoke: $target for $seconds s"
    if cargo +nightly fuzz run "${flags[@]}" "$target" "$work/$target" "fuzz/corpus/$target" -- \
        -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
        -artifact_prefix="fuzz/artifacts/$target/" "${extra[@]}" >"$work/$target.log" 2>&1; then
        grep -E '^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units)' "$work/$target.log" || true
    else
        tail -n 40 "$work/$target.log"
        failed+=("$target")
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz smoke: FAILED: ${failed[*]} (inputs in fuzz/artifacts/)"
    exit 1
fi
echo "fuzz smoke: ${#targets[@]} targets, no crash"
