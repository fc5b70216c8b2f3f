#!/usr/bin/env bash
# Builds the kube-apiserver, etcd and kubectl that the Kubernetes integration
# tests (internal/kubetest) run, from the versions pinned in this directory's
# go.mod, using nothing but the Go module proxy.
#
# The binaries go to a cache directory keyed by a hash of everything that
# decides them (go.mod, go.sum, this script and etcd/main.go), so a change to
# any of them builds afresh and an unchanged tree costs nothing:
#
#   ${NETPOL_K8S_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/netpol/k8s-bin}/<key>/
#
# internal/kubetest computes the same key and checks for the same binaries;
# keep the two in step (internal/kubetest's tests compare the keys, through
# --dir, which prints the directory without building). The only line on
# stdout is the directory. A cold build takes several minutes.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
key="$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" "$here/etcd/main.go" | sha256sum | cut -c1-16)"
dir="${NETPOL_K8S_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/netpol/k8s-bin}/$key"
if [ "${1:-}" = --dir ]; then
  echo "$dir"
  exit 0
fi

bins=(kube-apiserver etcd kubectl)
cached=1
for b in "${bins[@]}"; do
  [ -x "$dir/$b" ] || cached=0
done
if [ "$cached" = 1 ]; then
  echo "$dir"
  exit 0
fi

cd "$here"
# Release builds stamp the version; without it /version says v0.0.0-master.
version="$(go list -m -f '{{.Version}}' k8s.io/kubernetes)"
minor="$(echo "$version" | cut -d. -f2)"
vpkg=k8s.io/component-base/version
ldflags="-s -w -X $vpkg.gitVersion=$version -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=$minor -X $vpkg.gitTreeState=clean"

mkdir -p "$dir"
# Build into a scratch directory beside the target and rename at the end, so
# an interrupted build never leaves a half-written binary that looks cached.
tmp="$(mktemp -d "$dir.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

echo "building kube-apiserver and kubectl $version, and etcd, into $dir" >&2
# One go build for all lets the compiler share and interleave their packages.
CGO_ENABLED=0 go build -trimpath -ldflags="$ldflags" -o "$tmp/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl ./etcd

for b in "${bins[@]}"; do
  mv "$tmp/$b" "$dir/$b"
done
echo "$dir"
