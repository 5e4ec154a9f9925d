#!/usr/bin/env bash
# Builds a real kube-apiserver, kube-controller-manager and etcd from the Go modules pinned in go.mod
# into tools/controlplane/bin/
# (git-ignored). Go's build cache makes a second run take seconds; see the README's "Real control plane".
# With --capi it also builds Cluster API core (capi-core: the MachinePool and Machine controllers and
# CAPI's webhooks) from the capi/ module, whose go.mod names the one CAPI release capi-ts targets.
set -euo pipefail

with_capi=false
for arg in "$@"; do
  case "$arg" in
    --capi) with_capi=true ;;
    -h | --help) echo "usage: ./dev controlplane [--capi]"; exit 0 ;;
    *) echo "[controlplane] unknown argument '$arg' (usage: ./dev controlplane [--capi])" >&2; exit 2 ;;
  esac
done

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$here/bin"
say() { printf '[controlplane] %s\n' "$*" >&2; }

command -v go >/dev/null || {
  say "Go is not on PATH. Install Go 1.25 or newer (https://go.dev/dl/), or point KUBEBUILDER_ASSETS at a"
  say "folder holding kube-apiserver and etcd (for example from setup-envtest) instead of building them."
  exit 1
}

cd "$here"
kube_version="$(go list -m -f '{{.Version}}' k8s.io/kubernetes)"
etcd_version="$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)"
minor="${kube_version#v1.}"; minor="${minor%%.*}"
# /version of the built server reports the release instead of the "v0.0.0-master" placeholder.
ldflags="-s -w"
ldflags+=" -X k8s.io/component-base/version.gitVersion=$kube_version"
ldflags+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
ldflags+=" -X go.etcd.io/etcd/api/v3/version.GitSHA=$etcd_version"

say "building kube-apiserver and kube-controller-manager $kube_version and etcd $etcd_version into ${out#"$PWD"/}/"
start=$SECONDS
mkdir -p "$out"
# Static binaries (no C toolchain needed); -buildvcs=false so a new commit in this repository does not
# change the binaries and force a relink; `nice` because the build is heavy and the machine is shared.
CGO_ENABLED=0 nice -n 10 go build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$out/" \
  ./cmd/kube-apiserver ./cmd/kube-controller-manager ./cmd/etcd
if [[ "$with_capi" == true ]]; then
  capi_version="$(cd capi && go list -m -f '{{.Version}}' sigs.k8s.io/cluster-api)"
  say "building CAPI core (sigs.k8s.io/cluster-api $capi_version): controllers and webhooks"
  (cd capi && CGO_ENABLED=0 nice -n 10 go build -trimpath -buildvcs=false -ldflags "-s -w" -o "$out/" \
    ./cmd/capi-core)
  # An older build's binary under its former name would otherwise be found by nothing and linger.
  rm -f "$out/machinepool-controller"
fi
say "done in $((SECONDS - start)) s: $(cd "$out" && ls | paste -sd' ')"
