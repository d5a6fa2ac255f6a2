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

// The figures' shapes, as hack/benchreport reads them (it is a module of
// its own and keeps its own copy of these types).

// PhaseSample counts a scale-up's Machines by phase, and those Running and
// Ready, at a moment: BenchmarkScaleWindows0To50 and 0To500 write a list
// of them to scale-0-to-N.json.
type PhaseSample struct {
	Seconds float64        `json:"seconds"`
	Phases  map[string]int `json:"phases"`
	Ready   int            `json:"ready"`
}

// MemoryRun is a process's memory while it held Machines machines:
// BenchmarkManagerMemory1000Machines writes it to manager-memory.json.
type MemoryRun struct {
	Machines int     `json:"machines"`
	GoalMiB  float64 `json:"goalMiB"`
	// PeakMiB is the process's VmHWM, which the goal is checked against;
	// the samples, every 250 ms, may miss the peak.
	PeakMiB float64        `json:"peakMiB"`
	Samples []MemorySample `json:"samples"`
}

// MemorySample is a process's RSS a moment after it started.
type MemorySample struct {
	Seconds float64 `json:"seconds"`
	RSSMiB  float64 `json:"rssMiB"`
}
