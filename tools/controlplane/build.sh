#!/usr/bin/env bash
# Builds a real kube-apiserver, kube-controller-manager and etcd from the Go modules pinned in go.mod
# into tools/controlplane/bin/ (git-ignored), with serving-cert (the webhook serving pair of the test
# bed). Go's build cache makes a second run take seconds; see the README's "Real control plane".
#
# With --capi it also builds CAPI's own manager (the main package of sigs.k8s.io/cluster-api, every
# controller and webhook clusterctl deploys) of the release capi-ts targets, from the capi/ module
# whose go.mod names it, into bin/capi/<release>/: the binaries `manager` and (for the target release)
# `clusterctl`, the release's CRDs (crds/, from its Go modules), its webhook manifests (webhooks.yaml) and release.json (the feature gates of
# clusterctl's default deployment, with MachinePool and ClusterTopology on). --capi-release R builds
# release R as well, from the module folder capi-R/ (each release with the dependency versions it was
# released with). A release that fails to build leaves bin/capi/<R>/build-error.txt saying why, and no
# manager: the tests on it are skipped, loudly.
set -euo pipefail

with_capi=false
releases=()
usage="usage: ./dev controlplane [--capi] [--capi-release vX.Y.Z]"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --capi) with_capi=true ;;
    --capi-release)
      [[ $# -ge 2 ]] || { echo "[controlplane] --capi-release needs a release, e.g. v1.13.6 ($usage)" >&2; exit 2; }
      with_capi=true; releases+=("$2"); shift ;;
    --capi-release=*) with_capi=true; releases+=("${1#--capi-release=}") ;;
    -h | --help) echo "$usage"; exit 0 ;;
    *) echo "[controlplane] unknown argument '$1' ($usage)" >&2; exit 2 ;;
  esac
  shift
done

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
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
  ./cmd/kube-apiserver ./cmd/kube-controller-manager ./cmd/etcd ./cmd/serving-cert

# build_capi RELEASE MODULE_DIR [clusterctl]: CAPI's manager of RELEASE and what it runs with (and its
# clusterctl when asked), into bin/capi/RELEASE/.
build_capi() {
  local release="$1" module_dir="$2" with_clusterctl="${3:-}" dest="$out/capi/$1"
  local log version dir main_pkg config minor_capi gates
  rm -rf "$dest" && mkdir -p "$dest"
  log="$dest/build.log"
  fail_release() {
    printf '%s\n' "$1" >"$dest/build-error.txt"
    say "CAPI $release NOT built: $1"
    say "  (the tests on CAPI $release are skipped, loudly; the full output is in ${log#"$root"/})"
    return 1
  }
  if [[ ! -f "$module_dir/go.mod" ]]; then
    local known; known="$(cd "$here" && ls -d capi-v* 2>/dev/null | sed 's/^capi-//' | paste -sd' ' -)"
    fail_release "no Go module folder for sigs.k8s.io/cluster-api $release (tools/controlplane/${module_dir#"$here"/}/go.mod); releases with one: ${known:-none} besides the target" || return 1
  fi
  version="$(cd "$module_dir" && go list -m -f '{{.Version}}' sigs.k8s.io/cluster-api 2>"$log")" ||
    { fail_release "module tools/controlplane/${module_dir#"$here"/}: cannot resolve sigs.k8s.io/cluster-api: $(tail -1 "$log")" || return 1; }
  [[ "$version" == "$release" ]] ||
    { fail_release "tools/controlplane/${module_dir#"$here"/}/go.mod requires sigs.k8s.io/cluster-api $version, not $release" || return 1; }
  dir="$(cd "$module_dir" && go mod download -json sigs.k8s.io/cluster-api 2>>"$log" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [[ -n "$dir" && -d "$dir" ]] ||
    { fail_release "cannot download sigs.k8s.io/cluster-api@$release: $(tail -1 "$log")" || return 1; }
  # The manager's main package moved from the module root (up to v1.13) to core/ (v1.14 on), and its
  # kustomize configuration from config/ to core/config/.
  if [[ -f "$dir/core/main.go" ]]; then main_pkg="sigs.k8s.io/cluster-api/core"; config="$dir/core/config"
  elif [[ -f "$dir/main.go" ]]; then main_pkg="sigs.k8s.io/cluster-api"; config="$dir/config"
  else fail_release "sigs.k8s.io/cluster-api@$release has neither main.go nor core/main.go" || return 1; fi
  minor_capi="${release#v1.}"; minor_capi="${minor_capi%%.*}"
  say "building CAPI's manager $release ($main_pkg, module tools/controlplane/${module_dir#"$here"/})"
  if ! (cd "$module_dir" && CGO_ENABLED=0 nice -n 10 go build -trimpath -buildvcs=false \
    -ldflags "-s -w -X sigs.k8s.io/cluster-api/version.gitVersion=$release -X sigs.k8s.io/cluster-api/version.gitMajor=1 -X sigs.k8s.io/cluster-api/version.gitMinor=$minor_capi" \
    -o "$dest/manager.partial" "$main_pkg") >>"$log" 2>&1; then
    rm -f "$dest/manager.partial"
    fail_release "go build of $main_pkg@$release failed: $(grep -v '^#' "$log" | tail -3 | paste -sd' ' -)" || return 1
  fi
  # clusterctl of the same release (move and upgrade are judged by the real one), beside the manager.
  if [[ "$with_clusterctl" == clusterctl ]]; then
    [[ -f "$dir/cmd/clusterctl/main.go" ]] ||
      { fail_release "sigs.k8s.io/cluster-api@$release has no cmd/clusterctl" || return 1; }
    say "building clusterctl $release"
    if ! (cd "$module_dir" && CGO_ENABLED=0 nice -n 10 go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X sigs.k8s.io/cluster-api/version.gitVersion=$release -X sigs.k8s.io/cluster-api/version.gitMajor=1 -X sigs.k8s.io/cluster-api/version.gitMinor=$minor_capi" \
      -o "$dest/clusterctl.partial" sigs.k8s.io/cluster-api/cmd/clusterctl) >>"$log" 2>&1; then
      rm -f "$dest/manager.partial" "$dest/clusterctl.partial"
      fail_release "go build of sigs.k8s.io/cluster-api/cmd/clusterctl@$release failed: $(grep -v '^#' "$log" | tail -3 | paste -sd' ' -)" || return 1
    fi
  fi
  # clusterctl's default deployment: the --feature-gates argument of the release's manager.yaml with
  # each ${VARIABLE:=default} at its default; then MachinePool and ClusterTopology on.
  gates="$(sed -n 's/.*"--feature-gates=\([^"]*\)".*/\1/p' "$config/manager/manager.yaml" | sed 's/\${[A-Z_]*:=\([a-z]*\)}/\1/g')"
  [[ -n "$gates" ]] || { fail_release "no --feature-gates argument in $config/manager/manager.yaml" || return 1; }
  gates="$(printf '%s' "$gates" | sed -e 's/MachinePool=false/MachinePool=true/' -e 's/ClusterTopology=false/ClusterTopology=true/')"
  cp "$config/webhook/manifests.yaml" "$dest/webhooks.yaml"
  if ! (cd "$root" && node --import tsx scripts/capi-crds.ts --release "$release" --out "$dest/crds") >>"$log" 2>&1; then
    rm -f "$dest/manager.partial"
    fail_release "rendering the CRDs of sigs.k8s.io/cluster-api@$release failed: $(tail -2 "$log" | paste -sd' ' -)" || return 1
  fi
  # crds/ holds CRDs only (installable as a folder); which modules they came from is kept beside it.
  mv "$dest/crds/release.json" "$dest/crds-modules.json"
  cat >"$dest/release.json" <<JSON
{
  "release": "$release",
  "mainPackage": "$main_pkg",
  "module": "tools/controlplane/${module_dir#"$here"/}",
  "featureGates": "$gates",
  "note": "Written by ./dev controlplane --capi; the CRDs in crds/ and webhooks.yaml come from sigs.k8s.io/cluster-api@$release."
}
JSON
  [[ -f "$dest/clusterctl.partial" ]] && mv "$dest/clusterctl.partial" "$dest/clusterctl"
  mv "$dest/manager.partial" "$dest/manager"
  say "CAPI $release: bin/capi/$release/manager (feature gates $gates)"
}

capi_failed=()
if [[ "$with_capi" == true ]]; then
  command -v node >/dev/null || { say "--capi renders each release's CRDs with Node: run it as ./dev controlplane --capi"; exit 1; }
  target="$(cd capi && go list -m -f '{{.Version}}' sigs.k8s.io/cluster-api)"
  build_capi "$target" "$here/capi" clusterctl || capi_failed+=("$target")
  for release in "${releases[@]}"; do
    [[ "$release" == "$target" ]] && continue
    [[ "$release" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || { say "--capi-release takes a release such as v1.13.6, not '$release'"; capi_failed+=("$release"); continue; }
    build_capi "$release" "$here/capi-$release" || capi_failed+=("$release")
  done
  # Older builds' binaries under former names would otherwise be found by nothing and linger.
  rm -f "$out/capi-core" "$out/machinepool-controller"
fi
say "done in $((SECONDS - start)) s: $(cd "$out" && ls | paste -sd' ' -)"
if [[ ${#capi_failed[@]} -gt 0 ]]; then
  say "FAILED: CAPI ${capi_failed[*]} (see above)"
  exit 1
fi
