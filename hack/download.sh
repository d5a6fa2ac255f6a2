#!/usr/bin/env bash
# Downloads the Go modules that packages need, in the module at a directory,
# before a build or test does, and says in one line how many it took and how
# long, instead of the go command's "go: downloading" line per module as a
# build finds each missing (a fresh machine's first run printed hundreds).
# Nothing is printed when every module is in the cache already.
#
#   hack/download.sh [-test] DIR PACKAGE...
#
# -test includes the packages' tests' imports.
set -euo pipefail
test=()
if [[ "${1:-}" == -test ]]; then
  test=(-test)
  shift
fi
dir=$1
shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$SECONDS
# ${test[@]+...}: an empty array is unset to bash before 4.4 under set -u.
if ! (cd "$dir" && "${GO:-go}" list -deps ${test[@]+"${test[@]}"} "$@" >/dev/null 2>"$log"); then
  cat "$log" >&2
  exit 1
fi
n=$(grep -c '^go: downloading' "$log" || true)
if ((n > 0)); then
  echo "downloaded $n Go modules for $dir in $((SECONDS - start)) s" >&2
fi
