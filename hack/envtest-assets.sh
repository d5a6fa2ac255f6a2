#!/usr/bin/env bash
# Builds kube-apiserver and etcd for envtest from their Go modules into a cache
# outside the work tree, and prints the directory that holds them.
#
# A finished directory carries a stamp file; it is written last, after both
# binaries have been renamed into place, so an interrupted build is never
# taken for a finished one. Each binary is built to a temporary name in the
# same directory and renamed, so a half-written file never has the final name.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools="$root/hack/tools/envtest"
# shellcheck source=tools/envtest/versions.env
. "$tools/versions.env"

cache=${CAPWIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/capwin}
dir="$cache/envtest/kube-$KUBE_VERSION-etcd-$ETCD_VERSION"
stamp="$dir/.complete"

if [[ -f "$stamp" && -x "$dir/kube-apiserver" && -x "$dir/etcd" ]]; then
  echo "$dir"
  exit 0
fi

# The wrapper modules must pin the versions named in versions.env.
grep -q "k8s.io/kubernetes $KUBE_VERSION" "$root/hack/kubernetes/go.mod" ||
  { echo "hack/kubernetes/go.mod does not pin k8s.io/kubernetes $KUBE_VERSION" >&2; exit 1; }
grep -q "go.etcd.io/etcd/server/v3 $ETCD_VERSION" "$tools/etcd/go.mod" ||
  { echo "hack/tools/envtest/etcd/go.mod does not pin go.etcd.io/etcd/server/v3 $ETCD_VERSION" >&2; exit 1; }

mkdir -p "$dir"
# One build at a time per directory; a second caller waits, then finds the
# binaries in place.
exec 9>"$dir/.lock"
flock 9
if [[ -f "$stamp" && -x "$dir/kube-apiserver" && -x "$dir/etcd" ]]; then
  echo "$dir"
  exit 0
fi
# Temporary files of an interrupted build.
rm -f "$dir"/.kube-apiserver.* "$dir"/.etcd.*

tmp=""
trap 'if [[ -n "$tmp" ]]; then rm -f "$tmp"; fi' EXIT

build() { # name module-dir package ldflags
  local name=$1 mod=$2 pkg=$3 ldflags=$4
  if [[ -x "$dir/$name" ]]; then
    return 0 # renamed into place only once complete
  fi
  tmp=$(mktemp "$dir/.$name.XXXXXX")
  echo "building $name ($pkg) into $dir; this takes several minutes the first time" >&2
  (cd "$mod" && CGO_ENABLED=0 GOFLAGS=-mod=readonly go build -trimpath -ldflags "$ldflags" -o "$tmp" "$pkg")
  mv -f "$tmp" "$dir/$name"
  tmp=""
}

minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
build kube-apiserver "$root/hack/kubernetes" k8s.io/kubernetes/cmd/kube-apiserver \
  "-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
build etcd "$tools/etcd" go.etcd.io/etcd/server/v3 "-s -w"

"$dir/kube-apiserver" --version >&2
# Not `| head -1`: head exits after one line, and etcd, still writing,
# dies of SIGPIPE, which pipefail turns into this script's failure.
etcd_version=$("$dir/etcd" --version)
echo "${etcd_version%%$'\n'*}" >&2
touch "$stamp"
echo "$dir"
