#!/usr/bin/env bash
# Builds the Go peers of `./dev bench peers` into tools/peers/bin/ (git-ignored). The benchmark runs
# this itself when the binary is missing or older than its sources; Go's build cache makes a rebuild
# take seconds.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
command -v go >/dev/null || {
  echo "[peers] Go is not on PATH: install Go 1.25 or newer (https://go.dev/dl/) to build the controller-runtime peer" >&2
  exit 1
}
mkdir -p "$here/bin"
cd "$here/controller-runtime"
CGO_ENABLED=0 nice -n 10 go build -trimpath -buildvcs=false -ldflags "-s -w" -o "$here/bin/gadget-controller-runtime" .
