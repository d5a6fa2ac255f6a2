#!/usr/bin/env bash
# Runs a long command and says how it goes, on standard error: WHAT when it
# starts, the time elapsed every 30 s while it runs, and how long it took
# when it took more than 5 s. The command's own output passes through.
#
#   hack/progress.sh WHAT COMMAND [ARG...]
#
# WHAT is a phrase that follows "building" and "built", for example
# "capwin (cmd/capwin)".
set -euo pipefail
what=$1
shift
echo "building $what..." >&2
start=$SECONDS
# The ticker sleeps in a child it can kill, so that it ends at once when the
# command does; it never outlives this script by more than its sleep, and
# holds no pipe of the caller's standard output meanwhile.
(
  exec 9>&- # a caller's lock (hack/envtest-assets.sh) stays with the caller
  s=""
  trap 'if [[ -n "$s" ]]; then kill "$s" 2>/dev/null; fi; exit 0' TERM
  while kill -0 $$ 2>/dev/null; do
    sleep 30 & s=$!
    wait "$s"
    echo "  still building $what: $((SECONDS - start)) s" >&2
  done
) >/dev/null &
ticker=$!
trap 'kill "$ticker" 2>/dev/null || true' EXIT
"$@"
if ((SECONDS - start > 5)); then
  echo "built $what in $((SECONDS - start)) s" >&2
fi
