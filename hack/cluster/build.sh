#!/usr/bin/env bash
# Builds every part of hack/cluster's real cluster but netpol itself, from
# pinned versions and nothing but the Go module proxy and Debian's packages:
#
#   bin/     kubelet, kube-proxy, kube-controller-manager, kube-scheduler,
#            agnhost and the cut-down e2e.test (hack/k8s-bin's module, so the
#            Kubernetes version is pinned in one place); containerd, its runc
#            shim and ctr (./containerd); coredns (./coredns); the image
#            packer and pause (./image); conformance.test, network-policy-api's
#            conformance suite at the version netpol's go.mod pins, with
#            ./conformance/no-sctp-kernel.patch applied; runc (Debian)
#   cni/     bridge, host-local, portmap, loopback (Debian)
#   rootfs/  Debian bookworm minbase, slimmed as debian:bookworm-slim is,
#            with nftables: the netpol image's filesystem is then the one the
#            Dockerfile makes (and agnhost's base, with bash and coreutils)
#   images/  pause, agnhost (2.63.0 and 2.45), coredns as docker-archive
#            tarballs with the tags the suites and manifests name
#
# into a cache directory keyed by a hash of everything that decides them, as
# hack/k8s-bin/build.sh does:
#
#   ${NETPOL_CLUSTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/netpol/cluster}/<key>/
#
# The only line on stdout is the directory; --dir prints it without
# building. A cold build takes about 20 minutes and 5 GB of Go build cache;
# it needs root (debootstrap) and debootstrap itself.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

# Debian packages, pinned: a version Debian no longer serves fails the build
# rather than drifting.
debian_suite=bookworm
debian_mirror=http://deb.debian.org/debian
runc_version=1.1.5+ds1-1+deb12u1
cni_version=1.1.1+ds1-3+b5
nftables_version=1.0.6-2+deb12u2
coredns_tag=v1.14.2
agnhost_tags=2.63.0,2.45
pause_tag=3.10.2

npa_version="$(cd "$repo" && go list -m -f '{{.Version}}' sigs.k8s.io/network-policy-api)"

key="$( (
  cd "$repo"
  cat hack/k8s-bin/go.mod hack/k8s-bin/go.sum hack/k8s-bin/e2e/*.go
  cat hack/cluster/build.sh
  find hack/cluster/containerd hack/cluster/coredns hack/cluster/image hack/cluster/conformance -type f | LC_ALL=C sort | xargs cat
  echo "$npa_version"
) | sha256sum | cut -c1-16)"
dir="${NETPOL_CLUSTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/netpol/cluster}/$key"
if [ "${1:-}" = --dir ]; then
  echo "$dir"
  exit 0
fi
if [ -e "$dir/done" ]; then
  echo "$dir"
  exit 0
fi

mkdir -p "$(dirname "$dir")"
# Everything is built into a scratch directory and renamed at the end, so an
# interrupted build never leaves a directory that looks finished.
tmp="$(mktemp -d "$dir.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/cni" "$tmp/images"
log() { echo "build: $*" >&2; }
export CGO_ENABLED=0
goflags=(-trimpath -ldflags=-s\ -w)

log "Kubernetes node binaries and e2e.test (hack/k8s-bin)"
(
  cd "$repo/hack/k8s-bin"
  version="$(go list -m -f '{{.Version}}' k8s.io/kubernetes)"
  minor="$(echo "$version" | cut -d. -f2)"
  vpkg=k8s.io/component-base/version
  ldflags="-s -w -X $vpkg.gitVersion=$version -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=$minor -X $vpkg.gitTreeState=clean"
  go build -trimpath -ldflags="$ldflags" -o "$tmp/bin/" \
    k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy \
    k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler \
    k8s.io/kubernetes/test/images/agnhost
  go test -c "${goflags[@]}" -o "$tmp/bin/e2e.test" ./e2e
)

log "containerd"
(
  cd "$here/containerd"
  go build "${goflags[@]}" -tags 'no_btrfs no_devmapper no_zfs urfave_cli_no_docs osusergo netgo' -o "$tmp/bin/" \
    github.com/containerd/containerd/v2/cmd/containerd \
    github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
    github.com/containerd/containerd/v2/cmd/ctr
)

log "coredns, the image packer and pause"
(cd "$here/coredns" && go build "${goflags[@]}" -o "$tmp/bin/coredns" .)
(cd "$here/image" && go build "${goflags[@]}" -o "$tmp/bin/" . ./pause)

log "network-policy-api $npa_version conformance suite, patched"
(
  src="$(cd "$repo" && go mod download -json "sigs.k8s.io/network-policy-api@$npa_version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
  cp -r "$src" "$tmp/npa"
  chmod -R u+w "$tmp/npa"
  cd "$tmp/npa"
  patch -p1 --quiet < "$here/conformance/no-sctp-kernel.patch"
  go test -c "${goflags[@]}" -o "$tmp/bin/conformance.test" ./conformance
  cd "$tmp"
  rm -rf "$tmp/npa"
)

log "Debian: runc $runc_version, CNI plugins $cni_version"
(
  cd "$tmp"
  apt-get -o APT::Sandbox::User=root download -qq "runc=$runc_version" "containernetworking-plugins=$cni_version" >/dev/null
  dpkg-deb -x runc_*.deb debs
  dpkg-deb -x containernetworking-plugins_*.deb debs
  cp debs/usr/sbin/runc bin/runc
  for p in bridge host-local portmap loopback; do
    cp "debs/usr/lib/cni/$p" cni/
  done
  rm -rf debs ./*.deb
)

log "Debian $debian_suite minbase with nftables (debootstrap)"
debootstrap --variant=minbase --include=nftables "$debian_suite" "$tmp/rootfs" "$debian_mirror" >"$tmp/debootstrap.log" 2>&1 ||
  { tail -20 "$tmp/debootstrap.log" >&2; exit 1; }
got="$(chroot "$tmp/rootfs" dpkg-query -W -f '${Version}' nftables)"
if [ "$got" != "$nftables_version" ]; then
  echo "build: Debian serves nftables $got, build.sh pins $nftables_version: update the pin" >&2
  exit 1
fi
# Slim as debian:bookworm-slim is (debuerreotype's slimify): no
# documentation but the copyrights, no manuals, info pages or locales, and
# dpkg told so for what is installed later.
(
  cd "$tmp/rootfs"
  find usr/share/doc -mindepth 1 -not -name copyright -not -type d -delete
  find usr/share/doc -mindepth 1 -type d -empty -delete
  rm -rf usr/share/groff/* usr/share/info/* usr/share/lintian/* usr/share/linda/* usr/share/locale/* usr/share/man/*
  printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
    'path-exclude /usr/share/groff/*' 'path-exclude /usr/share/info/*' 'path-exclude /usr/share/lintian/*' \
    'path-exclude /usr/share/linda/*' 'path-exclude /usr/share/locale/*' 'path-exclude /usr/share/man/*' \
    >etc/dpkg/dpkg.cfg.d/docker
)
# As the Dockerfile's apt-get line leaves it.
rm -rf "$tmp/rootfs"/var/lib/apt/lists/* "$tmp/rootfs"/var/cache/apt/*.bin "$tmp/rootfs"/var/cache/apt/archives/*.deb "$tmp/debootstrap.log"

log "images"
pack="$tmp/bin/image"
"$pack" -tag "registry.k8s.io/pause:$pause_tag" -o "$tmp/images/pause.tar" -entrypoint /pause "$tmp/bin/pause=/pause"
agnhost_refs="$(echo "$agnhost_tags" | sed 's#\([^,]*\)#registry.k8s.io/e2e-test-images/agnhost:\1#g')"
"$pack" -tag "$agnhost_refs" -o "$tmp/images/agnhost.tar" -entrypoint /agnhost -cmd pause "$tmp/rootfs" "$tmp/bin/agnhost=/agnhost"
"$pack" -tag "registry.k8s.io/coredns/coredns:$coredns_tag" -o "$tmp/images/coredns.tar" -entrypoint /coredns "$tmp/bin/coredns=/coredns"

touch "$tmp/done"
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
echo "$dir"
