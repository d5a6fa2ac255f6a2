#!/usr/bin/env bash
# make test: every module's tests. The management module's run in the
# foreground; node-components', hack/bundle's, hack/benchreport's,
# hack/image's and the Windows build check run alongside at a lower priority (nice), since the management module's
# end-to-end tests leave part of the machine idle for minutes: on 2 cores
# this took a first run from 32 to 30 minutes. Their output follows the
# management module's; the exit status is non-zero when any failed.
#
# Its arguments (make's TEST_ARGS) are passed to every `go test`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
args=("$@")
go=${GO:-go}
make=${MAKE:-make}
# The management module's modules first, counted in one line, not a line
# each as the builds below find them missing.
hack/download.sh -test . ./...
KUBEBUILDER_ASSETS=$(hack/envtest-assets.sh)
export KUBEBUILDER_ASSETS

out=$(mktemp -d)
sidepid=""
stop_side() {
  if [[ -n "$sidepid" ]]; then kill -TERM -- "-$sidepid" 2>/dev/null || true; fi
}
trap 'stop_side; rm -rf "$out"' EXIT
trap 'stop_side; exit 130' INT TERM

side() {
  local rc=0 m
  for m in node-components hack/bundle hack/benchreport hack/image; do
    echo "+ cd $m && go test -timeout 45m ./... ${args[*]}" >&2
    # A longer bound than go test's 10 minutes: these wait on the
    # management module's tests for the CPU.
    (cd "$m" && "$go" test -timeout 45m ./... "${args[@]}") || rc=1
  done
  echo "+ make windows-check" >&2
  "$make" --no-print-directory GO="$go" windows-check || rc=1
  return "$rc"
}
# In a process group of its own (set -m), so that an interrupt stops all
# of it.
set -m
(
  # Lowered before anything starts, so that every process it starts is too.
  renice -n 10 -p "$BASHPID" >/dev/null || true
  set +e
  side >"$out/side.log" 2>&1
  echo $? >"$out/side.rc"
) &
sidepid=$!
set +m

# test/e2e, the longest by minutes, is named first: go test starts packages
# in the order they are named, so it runs from the start while the others
# take turns on the second core, instead of starting after most of them.
# -timeout: go test's default 10 minutes is per package, and test/e2e
# alone takes 7.5 to 10 minutes on 2 cores shared with the other packages
# (581 s measured on a run beside other work): a slow machine would time
# it out.
echo "+ go test -timeout 45m ./test/e2e ./... ${args[*]}" >&2
rc=0
"$go" test -timeout 45m ./test/e2e ./... "${args[@]}" || rc=1
echo "waiting for node-components, hack/bundle, hack/benchreport, hack/image and the Windows build check..." >&2
wait "$sidepid" || true
sidepid=""
cat "$out/side.log"
if [[ "$(cat "$out/side.rc" 2>/dev/null)" != 0 ]]; then
  rc=1
fi
exit "$rc"
