#!/usr/bin/env bash
# Runs `go mod tidy` in every module of the repository; `make verify` then
# fails if that changed a go.mod or go.sum.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
for mod in $(cd "$root" && git ls-files --cached --others --exclude-standard '*go.mod'); do
  (cd "$root/$(dirname "$mod")" && go mod tidy)
done
