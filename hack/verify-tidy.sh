#!/usr/bin/env bash
# Runs `go mod tidy` in every module of the repository; `make verify` then
# fails if that changed a go.mod or go.sum. The node bundle's wrapper
# modules (hack/bundle/modules) are left out: they are resolved for
# windows/amd64 only (tidy resolves every platform, and some of their
# Linux-only imports are not served), and hack/bundle's
# TestPinsResolveForWindows checks them.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
for mod in $(cd "$root" && git ls-files --cached --others --exclude-standard '*go.mod' | grep -v '^hack/bundle/modules/'); do
  (cd "$root/$(dirname "$mod")" && go mod tidy)
done
