// Package benchdata is where capwin's benchmarks leave the figures that
// `make bench` draws its report from (hack/benchreport).
package benchdata

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Env names the directory the figures go to; `make bench` sets it.
const Env = "CAPWIN_BENCH_OUT"

// Write writes v as JSON to the file name in the directory Env names; it
// does nothing when Env is unset, as in a plain `go test -bench`.
func Write(tb testing.TB, name string, v any) {
	tb.Helper()
	dir := os.Getenv(Env)
	if dir == "" {
		return
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, name), append(data, '\n'), 0o644)
	}
	if err != nil {
		tb.Fatalf("writing the benchmark's figures: %v", err)
	}
}
