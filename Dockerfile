# kube-arbiter container image.
#
#   docker build -t kube-arbiter:latest .
#
# Stage 1 builds the release binary; the dependencies are compiled in their
# own layer (from Cargo.toml/Cargo.lock and stub sources), so editing src/
# only recompiles our crate. The default is the plain release build (a few
# minutes on two cores), so that a first `docker build .` answers soon.
# Release images are built with `--build-arg PGO=1`: profile-guided
# optimisation (scripts/pgo-build.sh: an instrumented build serves the
# bundled synthetic cluster, and its profile guides the final build,
# dependencies included; the cached layer then serves only the training's
# examples), about 30 minutes on two cores for about a quarter less CPU per
# 500-name filter (docs/extender-performance.md, "The build").
# Stage 2 is distroless: glibc and libgcc, no shell, runs as the nonroot
# user (65532, as in manifests/deployment.yaml).

FROM rust:1.95-bookworm AS build
ARG PGO=0
WORKDIR /app

# Dependency layer: stub every target Cargo.toml names so the manifest
# loads, build, then throw the stubs away.
COPY Cargo.toml Cargo.lock ./
RUN set -eu; \
    mkdir -p src; \
    echo 'fn main() {}' > src/main.rs; \
    : > src/lib.rs; \
    for f in $(sed -n 's/^path *= *"\(.*\.rs\)".*/\1/p' Cargo.toml); do \
        [ -f "$f" ] || { mkdir -p "$(dirname "$f")"; echo 'fn main() {}' > "$f"; }; \
    done; \
    awk '/^\[\[(bench|test|example)\]\]/ { kind = $0; next } \
         /^\[/ { kind = "" } \
         kind != "" && /^name *=/ { \
             split($0, q, "\""); \
             dir = kind ~ /bench/ ? "benches" : kind ~ /test/ ? "tests" : "examples"; \
             print dir "/" q[2] ".rs" }' Cargo.toml | \
    while read -r f; do \
        [ -f "$f" ] || { mkdir -p "$(dirname "$f")"; echo 'fn main() {}' > "$f"; }; \
    done; \
    cargo build --release --locked; \
    rm -rf src benches tests examples \
        target/release/kube-arbiter target/release/deps/kube_arbiter-* \
        target/release/deps/libkube_arbiter-* target/release/.fingerprint/kube-arbiter-*

# The real build: only our crate compiles here. (.dockerignore keeps
# target/, .git/ and the deployment files out of the context.) The stub's
# fingerprints are gone, so cargo cannot mistake the stub for this source.
COPY . .
RUN set -eu; \
    touch src/main.rs src/lib.rs; \
    if [ "$PGO" = 1 ]; then \
        apt-get update -qq; \
        apt-get install -y -qq --no-install-recommends wrk curl python3; \
        scripts/pgo-build.sh; \
        cp target/pgo/release/kube-arbiter target/release/kube-arbiter; \
    else \
        cargo build --release --locked; \
    fi

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /app/target/release/kube-arbiter /kube-arbiter
USER nonroot:nonroot
EXPOSE 8443
ENTRYPOINT ["/kube-arbiter"]
CMD ["serve"]
