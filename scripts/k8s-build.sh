#!/usr/bin/env bash
# Builds the real Kubernetes components the real-cluster suite runs, from the
# pinned Go modules in e2e/ (go.mod and go.sum committed; the Go module proxy
# is the only source), into target/k8s/<version>/:
#
#   scripts/k8s-build.sh [1.37|1.34|helm|all]...   (default: 1.37)
#
# 1.37 and 1.34: etcd, kube-apiserver, kube-controller-manager and
# kube-scheduler (k8s.io/kubernetes with every k8s.io/* staging module
# replaced by its v0.x tag, as out-of-tree scheduler plugins build it; etcd
# at the version that release pins; with 1.37 also noop-extender, the
# standard-library extender the throughput benchmark compares with). helm:
# the helm CLI.
#
# A build is skipped when its folder holds every binary and the stamp of the
# go.sum it was built from; Go's own build cache (GOCACHE) makes a rebuild
# after a change cheap. Prints what it built and how long it took.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD

need_go() {
    if ! command -v go >/dev/null; then
        echo "k8s-build: the go command is missing (Go 1.26 or newer; /usr/local/go/bin on PATH?)" >&2
        exit 2
    fi
}

# build LABEL MODULE_DIR OUT_DIR LDFLAGS PACKAGES...
build() {
    local label=$1 module=$2 out=$3 ldflags=$4
    shift 4
    local stamp_want missing=0 bin
    stamp_want=$(sha256sum "$module/go.sum" "$module/go.mod" | sha256sum | cut -c1-16)
    for pkg in "$@"; do
        bin=$out/$(basename "$pkg")
        [ -x "$bin" ] || missing=1
    done
    if [ "$missing" = 0 ] && [ "$(cat "$out/.stamp" 2>/dev/null)" = "$stamp_want" ]; then
        echo "k8s-build: $label up to date in ${out#"$root"/}"
        return
    fi
    mkdir -p "$out"
    local started=$SECONDS
    echo "k8s-build: building $label ($*) into ${out#"$root"/} ..."
    (cd "$module" && go build -o "$out/" -ldflags "$ldflags" "$@")
    echo "$stamp_want" >"$out/.stamp"
    echo "k8s-build: built $label in $((SECONDS - started)) s"
    for pkg in "$@"; do
        bin=$out/$(basename "$pkg")
        printf '  %-26s %s\n' "$(basename "$pkg")" "$("$bin" --version 2>/dev/null | head -n 1 || true)"
    done
}

kubernetes() {
    local minor=$1 version=$2
    local module=$root/e2e/cluster/v$minor
    # Both version packages are stamped: kube-apiserver's /version and
    # kube-scheduler's --version come from component-base, client-go's
    # user agent from its own copy.
    local ld="-s -w"
    ld+=" -X k8s.io/component-base/version.gitVersion=$version"
    ld+=" -X k8s.io/component-base/version.gitMajor=1"
    ld+=" -X k8s.io/component-base/version.gitMinor=${minor#1.}"
    ld+=" -X k8s.io/component-base/version.gitTreeState=clean"
    ld+=" -X k8s.io/client-go/pkg/version.gitVersion=$version"
    ld+=" -X k8s.io/client-go/pkg/version.gitMajor=1"
    ld+=" -X k8s.io/client-go/pkg/version.gitMinor=${minor#1.}"
    local extra=()
    # The do-nothing extender the throughput benchmark compares with.
    [ -d "$module/noop-extender" ] && extra=(./noop-extender)
    build "Kubernetes $version" "$module" "$root/target/k8s/$version" "$ld" \
        k8s.io/kubernetes/cmd/kube-apiserver \
        k8s.io/kubernetes/cmd/kube-controller-manager \
        k8s.io/kubernetes/cmd/kube-scheduler \
        ./etcd "${extra[@]}"
}

helm() {
    local version=v4.3.2
    build "helm $version" "$root/e2e/helm" "$root/target/k8s/helm-$version" \
        "-s -w -X helm.sh/helm/v4/internal/version.version=$version" \
        helm.sh/helm/v4/cmd/helm
}

need_go
[ $# -gt 0 ] || set -- 1.37
for what in "$@"; do
    case $what in
    1.37) kubernetes 1.37 v1.37.2 ;;
    1.34) kubernetes 1.34 v1.34.4 ;;
    helm) helm ;;
    all) kubernetes 1.37 v1.37.2 && kubernetes 1.34 v1.34.4 && helm ;;
    *)
        echo "usage: scripts/k8s-build.sh [1.37|1.34|helm|all]..." >&2
        exit 2
        ;;
    esac
done
