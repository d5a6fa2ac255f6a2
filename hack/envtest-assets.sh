#!/usr/bin/env bash
# Builds kube-apiserver and etcd for envtest, and kubectl of the same
# Kubernetes version, from their Go modules into a cache outside the work
# tree, and prints the directory that holds them.
#
# A finished directory carries a stamp file; it is written last, after the
# three binaries have been renamed into place, so an interrupted build is never
# taken for a finished one. The binaries are built into a temporary
# directory beside it and renamed, so a half-written file never has a final
# name.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools="$root/hack/tools/envtest"
# shellcheck source=tools/envtest/versions.env
. "$tools/versions.env"

cache=${CAPWIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/capwin}
# The module's go.mod and go.sum name the directory too: a change of the
# libraries it builds with builds again.
sum=$(cat "$tools/go.mod" "$tools/go.sum" | sha256sum)
dir="$cache/envtest/kube-$KUBE_VERSION-etcd-$ETCD_VERSION-${sum:0:12}"
stamp="$dir/.complete"

if [[ -f "$stamp" && -x "$dir/kube-apiserver" && -x "$dir/etcd" && -x "$dir/kubectl" ]]; then
  echo "$dir"
  exit 0
fi

# The modules must pin the versions named in versions.env: the envtest
# module the three binaries are built from, and hack/kubernetes, the bundle's.
grep -qE "^\s*k8s.io/kubernetes ${KUBE_VERSION//./\\.}( |$)" "$root/hack/kubernetes/go.mod" ||
  { echo "hack/kubernetes/go.mod does not pin k8s.io/kubernetes $KUBE_VERSION" >&2; exit 1; }
grep -qE "^\s*k8s.io/kubernetes ${KUBE_VERSION//./\\.}( |$)" "$tools/go.mod" ||
  { echo "hack/tools/envtest/go.mod does not pin k8s.io/kubernetes $KUBE_VERSION" >&2; exit 1; }
grep -qE "^\s*go.etcd.io/etcd/server/v3 ${ETCD_VERSION//./\\.}( |$)" "$tools/go.mod" ||
  { echo "hack/tools/envtest/go.mod does not pin go.etcd.io/etcd/server/v3 $ETCD_VERSION" >&2; exit 1; }

mkdir -p "$dir"
# One build at a time per directory; a second caller waits, then finds the
# binaries in place.
exec 9>"$dir/.lock"
flock 9
if [[ -f "$stamp" && -x "$dir/kube-apiserver" && -x "$dir/etcd" && -x "$dir/kubectl" ]]; then
  echo "$dir"
  exit 0
fi
# Temporary files of an interrupted build.
rm -rf "$dir"/.build.*

tmp=""
trap 'if [[ -n "$tmp" ]]; then rm -rf "$tmp"; fi' EXIT

# All three in one go build, with go test's defaults (no -trimpath, cgo as the go
# command finds it): the packages they share with each other and with the
# management module's tests are compiled once (hack/tools/envtest/go.mod).
if [[ ! -x "$dir/kube-apiserver" || ! -x "$dir/etcd" || ! -x "$dir/kubectl" ]]; then
  tmp=$(mktemp -d "$dir/.build.XXXXXX")
  "$root/hack/download.sh" "$tools" k8s.io/kubernetes/cmd/kube-apiserver go.etcd.io/etcd/server/v3 k8s.io/kubernetes/cmd/kubectl
  echo "the envtest control plane is built once into $dir, then cached" >&2
  minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
  # The elapsed time every 30 s goes to standard error only: standard output
  # is the directory, read by the caller. The build keeps the lock (fd 9)
  # while it runs, even if this script is killed.
  (cd "$tools" && GOFLAGS=-mod=readonly "$root/hack/progress.sh" \
    "the envtest control plane, kube-apiserver $KUBE_VERSION and etcd $ETCD_VERSION, and kubectl $KUBE_VERSION (hack/tools/envtest)" \
    "${GO:-go}" build \
    -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean" \
    -o "$tmp/" k8s.io/kubernetes/cmd/kube-apiserver go.etcd.io/etcd/server/v3 k8s.io/kubernetes/cmd/kubectl)
  # go build names etcd's program after its package, server.
  mv -f "$tmp/kube-apiserver" "$dir/kube-apiserver"
  mv -f "$tmp/server" "$dir/etcd"
  mv -f "$tmp/kubectl" "$dir/kubectl"
fi

"$dir/kube-apiserver" --version >&2
# Not `| head -1`: head exits after one line, and etcd, still writing,
# dies of SIGPIPE, which pipefail turns into this script's failure.
etcd_version=$("$dir/etcd" --version)
echo "${etcd_version%%$'\n'*}" >&2
"$dir/kubectl" version --client >&2
touch "$stamp"
echo "$dir"
