#!/usr/bin/env bash
# CI provisioning for the Kubernetes tests on a real control plane (tests/kube_real): etcd, kube-apiserver,
# kube-controller-manager and kube-scheduler, kwok (the nodes), the JobSet controller with its CRD and webhooks,
# FrameworkController, Kueue, and KubeDL's MarsJob CRD -- all built from the Go module proxy at the versions in
# tests/kube_real/versions.env. Nothing is cloned and nothing built is committed: each part is cached under
# ~/.cache/paictl-tests/kube-<part>-<version>/ and reused when present, so only a fresh machine (or a new
# version) pays for a build. Every step prints its time.
#
# A part that fails to build is reported, its log kept beside the cache as <dir>.failed, and the script goes on: the
# tests needing that part skip in a local run and fail under CI (env CI set). The failure is remembered for that
# version for a day (no rebuild on every run); PAICTL_KUBE_RETRY=1 tries again at once.
#
# Arguments: the parts to build (kubernetes etcd kwok jobset frameworkcontroller kubedl-crd kueue; default: all).
# Needs Go >= 1.26 (/usr/local/go/bin/go or `go` on PATH); without Go nothing is built and the tests skip (fail in CI).
set -uo pipefail
cd "$(dirname "$0")/.."

# shellcheck disable=SC1091
. tests/kube_real/versions.env
CACHE="${PAICTL_TESTS_CACHE:-$HOME/.cache/paictl-tests}"
mkdir -p "$CACHE"

GO="$(command -v go || true)"
[ -n "$GO" ] || { [ -x /usr/local/go/bin/go ] && GO=/usr/local/go/bin/go; }
if [ -z "$GO" ]; then
    echo "provision-kube: no Go toolchain: the real control plane is not built (its tests skip; under CI they fail)"
    exit 0
fi
GO_VERSION="$("$GO" env GOVERSION)"
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0
# Go 1.27 turns on JSON v2, with which kube-apiserver serves /openapi/v2 with Go field names and kubectl apply fails
case "$GO_VERSION" in go1.2[7-9]*|go1.[3-9]*) export GOEXPERIMENT=nojsonv2 ;; esac

step_started=0
step() { step_started=$(date +%s); printf 'provision-kube: %s ...\n' "$1"; }
step_done() { printf 'provision-kube: %s %s (%ss)\n' "$1" "$2" "$(( $(date +%s) - step_started ))"; }

# build PART VERSION FUNCTION: runs FUNCTION OUT_DIR WORK_DIR unless the part is cached (or failed before)
build() {
    local part="$1" version="$2" recipe="$3"
    local dir="$CACHE/kube-$part-$version"
    if [ -f "$dir/ok" ]; then
        echo "provision-kube: $part $version cached ($dir)"
        return 0
    fi
    # a failure is remembered for a day (a network hiccup must not fail CI for good), or until PAICTL_KUBE_RETRY=1
    if [ -f "$dir.failed" ] && [ "${PAICTL_KUBE_RETRY:-}" != 1 ] && [ -z "$(find "$dir.failed" -mmin +1440)" ]; then
        echo "provision-kube: $part $version FAILED to build before (log: $dir.failed; PAICTL_KUBE_RETRY=1 retries)"
        return 0
    fi
    step "building $part $version"
    local out="$dir.partial" work
    rm -rf "$out" "$dir.failed"
    mkdir -p "$out/bin"
    work="$(mktemp -d)"
    # errexit in a subshell of its own: in an `if` condition it would be off, and a failed step would read as built
    (set -e; cd "$work"; "$recipe" "$out" "$work") >"$work.log" 2>&1
    if [ $? -eq 0 ]; then
        echo "$GO_VERSION" >"$out/go-version"
        rm -rf "$dir" && mv "$out" "$dir" && touch "$dir/ok"
        step_done "$part $version" built
    else
        mv "$work.log" "$dir.failed"
        rm -rf "$out"
        step_done "$part $version" "FAILED (log: $dir.failed; its tests skip locally and fail under CI)"
        tail -n 5 "$dir.failed" | sed 's/^/provision-kube:   /'
    fi
    rm -rf "$work" "$work.log"
}

# A wrapper module that requires MODULE@VERSION and builds PACKAGES of it: `go install pkg@version` refuses modules
# whose go.mod has replace directives (k8s.io/kubernetes, etcd); a wrapper builds them at the same pinned versions.
wrapper_module() {
    local work="$1" module="$2" version="$3"; shift 3
    cat >"$work/go.mod" <<EOF
module paictl.test/wrapper

go 1.26
EOF
    {
        echo '//go:build tools'
        echo 'package tools'
        echo 'import ('
        for package in "$@"; do echo "	_ \"$package\""; done
        echo ')'
    } >"$work/tools.go"
    nice "$GO" mod edit -require="$module@$version"
}

recipe_etcd() {
    local out="$1" work="$2"
    wrapper_module "$work" go.etcd.io/etcd/server/v3 "$ETCD_VERSION" go.etcd.io/etcd/server/v3
    # etcd's own replaces point at its sibling modules at the same version
    for sibling in api/v3 client/pkg/v3 client/v3 pkg/v3; do
        "$GO" mod edit -require="go.etcd.io/etcd/$sibling@$ETCD_VERSION"
    done
    nice "$GO" mod tidy
    nice "$GO" build -trimpath -ldflags "-s -w" -o "$out/bin/etcd" go.etcd.io/etcd/server/v3
}

recipe_kubernetes() {
    local out="$1" work="$2" minor
    wrapper_module "$work" k8s.io/kubernetes "$KUBERNETES_VERSION" \
        k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
        k8s.io/kubernetes/cmd/kube-scheduler
    # k8s.io/kubernetes replaces its staging modules with ./staging/...: pin each to its published v0.Y.Z instead
    local modfile staging
    modfile="$(nice "$GO" mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
    staging="v0.${KUBERNETES_VERSION#v1.}"
    grep -oE '^\s+k8s\.io/[a-z0-9-]+ => \./staging/' "$modfile" | awk '{print $1}' | while read -r m; do
        "$GO" mod edit -replace="$m=$m@$staging"
    done
    nice "$GO" mod tidy
    minor="${KUBERNETES_VERSION#v1.}"; minor="${minor%%.*}"
    local version_pkg=k8s.io/component-base/version
    nice "$GO" build -trimpath -o "$out/bin/" -ldflags "-s -w -X $version_pkg.gitVersion=$KUBERNETES_VERSION \
        -X $version_pkg.gitMajor=1 -X $version_pkg.gitMinor=$minor -X $version_pkg.gitTreeState=clean \
        -X $version_pkg.buildDate=1970-01-01T00:00:00Z" \
        k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
        k8s.io/kubernetes/cmd/kube-scheduler
}

recipe_kwok() {
    local out="$1"
    GOBIN="$out/bin" nice "$GO" install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
}

# A controller's binary, and its CRDs and webhook configuration from the same module version (its config/)
controller_with_config() {
    local out="$1" work="$2" module="$3" version="$4" package="$5" dir
    # a wrapper module, not `go install pkg@version`: that reads the module's version list (for deprecations),
    # which a proxy serving only some versions refuses
    wrapper_module "$work" "$module" "$version" "$package"
    nice "$GO" mod tidy
    nice "$GO" build -trimpath -ldflags "-s -w" -o "$out/bin/${package##*/}" "$package"
    dir="$("$GO" mod download -json "$module@$version" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
    mkdir -p "$out/crd" && cp "$dir"/config/components/crd/bases/*.yaml "$out/crd/"
    cp -r "$dir/config/components/webhook" "$out/webhook"
    # the conversion webhooks its kustomization patches into the CRDs (Kueue serves two API versions)
    if [ -d "$dir/config/components/crd/patches" ]; then
        cp -r "$dir/config/components/crd/patches" "$out/crd-patches"
        cp "$dir/config/components/crd/kustomization.yaml" "$out/crd-patches/"
    fi
    chmod -R u+w "$out"
}
recipe_jobset() { controller_with_config "$1" "$2" sigs.k8s.io/jobset "$JOBSET_VERSION" sigs.k8s.io/jobset; }
recipe_kueue() { controller_with_config "$1" "$2" sigs.k8s.io/kueue "$KUEUE_VERSION" sigs.k8s.io/kueue/cmd/kueue; }

# FrameworkController creates its own CRD when it starts
recipe_frameworkcontroller() {
    local out="$1" work="$2"
    wrapper_module "$work" github.com/microsoft/frameworkcontroller "$FRAMEWORKCONTROLLER_VERSION" \
        github.com/microsoft/frameworkcontroller/cmd/frameworkcontroller
    nice "$GO" mod tidy
    nice "$GO" build -trimpath -ldflags "-s -w" -o "$out/bin/frameworkcontroller" \
        github.com/microsoft/frameworkcontroller/cmd/frameworkcontroller
}

# KubeDL's controller needs Kubernetes 0.22-era dependencies: only its MarsJob CRD is installed
recipe_kubedl_crd() {
    local out="$1" dir
    dir="$("$GO" mod download -json "github.com/alibaba/kubedl@$KUBEDL_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
    mkdir -p "$out/crd" && cp "$dir/config/crd/bases/training.kubedl.io_marsjobs.yaml" "$out/crd/"
    chmod -R u+w "$out"
}

# The parts to build: the arguments, else all of them
declare -A VERSION_OF=([kubernetes]="$KUBERNETES_VERSION" [etcd]="$ETCD_VERSION" [kwok]="$KWOK_VERSION"
                       [jobset]="$JOBSET_VERSION" [frameworkcontroller]="$FRAMEWORKCONTROLLER_VERSION"
                       [kubedl-crd]="$KUBEDL_VERSION" [kueue]="$KUEUE_VERSION")
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(kubernetes etcd kwok jobset frameworkcontroller kubedl-crd kueue)
total_started=$(date +%s)
echo "provision-kube: $GO_VERSION, cache $CACHE"
for part in "${parts[@]}"; do
    [ -n "${VERSION_OF[$part]:-}" ] || { echo "provision-kube: no part named $part"; exit 2; }
    build "$part" "${VERSION_OF[$part]}" "recipe_${part//-/_}"
done
echo "provision-kube: done in $(( $(date +%s) - total_started ))s"
