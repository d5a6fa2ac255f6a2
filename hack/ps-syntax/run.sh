#!/usr/bin/env bash
# Checks the syntax of PowerShell files with the tree-sitter grammar under
# node. The npm packages (pinned by package-lock.json) are installed once into
# the capwin cache, outside the work tree.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "ps-syntax: $tool is not installed; it is needed to check the PowerShell bootstrap script (apt-get install nodejs npm)" >&2; exit 3; }
done
cache=${CAPWIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/capwin}
key=$(cat "$here/package.json" "$here/package-lock.json" "$here/check.mjs" | sha256sum | cut -c1-16)
dir="$cache/ps-syntax/$key"
if [[ ! -f "$dir/.complete" ]]; then
  rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
  cp "$here/package.json" "$here/package-lock.json" "$here/check.mjs" "$dir.tmp/"
  (cd "$dir.tmp" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >&2)
  touch "$dir.tmp/.complete"
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
fi
# --liftoff-only: V8 otherwise compiles the grammar's WebAssembly a second
# time, optimised, in the background, and node waits for that before it
# exits: about 10 s of CPU for each run, against 0.1 s.
exec node --liftoff-only "$dir/check.mjs" "$@"
