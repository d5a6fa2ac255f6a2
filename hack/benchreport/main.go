// Command benchreport draws `make bench`'s report: it reads the figures the
// benchmarks left in a directory (test/benchdata) and the benchmarks'
// output, and writes report.md with SVG charts beside it.
//
//	go run . -data ../../out/bench/data -bench ../../out/bench/bench.txt -out ../../out/bench
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	data := flag.String("data", "out/bench/data", "the directory the benchmarks wrote their figures to")
	bench := flag.String("bench", "out/bench/bench.txt", "the benchmarks' output")
	out := flag.String("out", "out/bench", "where report.md and its charts are written")
	flag.Parse()
	if err := run(*data, *bench, *out); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
	fmt.Println("wrote", filepath.Join(*out, "report.md"))
}

// The figures' files, as the benchmarks name them.
const (
	roundTripsFile = "vsphere-round-trips.json"
	memoryFile     = "manager-memory.json"
	scalePrefix    = "scale-0-to-"
)

// phaseSample, memorySample and memoryRun are what the benchmarks write:
// the management module's test/benchdata types, copied so that this module
// does not depend on that one.

// phaseSample is a moment of a scale-up (test/e2e's BenchmarkScaleWindows).
type phaseSample struct {
	Seconds float64        `json:"seconds"`
	Phases  map[string]int `json:"phases"`
	Ready   int            `json:"ready"`
}

// memorySample is a moment of the manager's memory
// (cmd/capwin-manager's BenchmarkManagerMemory1000Machines).
type memorySample struct {
	Seconds float64 `json:"seconds"`
	RSSMiB  float64 `json:"rssMiB"`
}

type memoryRun struct {
	Machines int     `json:"machines"`
	GoalMiB  float64 `json:"goalMiB"`
	// PeakMiB is the process's peak RSS (VmHWM), which the samples, taken
	// every 250 ms, may miss.
	PeakMiB float64        `json:"peakMiB"`
	Samples []memorySample `json:"samples"`
}

func run(dataDir, benchOut, outDir string) error {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	figures := 0
	var md strings.Builder
	md.WriteString("# capwin benchmarks\n\nWritten by `make bench`; the figures below are this machine's, from this run.\n")

	scales, err := filepath.Glob(filepath.Join(dataDir, scalePrefix+"*.json"))
	if err != nil {
		return err
	}
	slices.Sort(scales)
	for _, f := range scales {
		var samples []phaseSample
		if err := readJSON(f, &samples); err != nil {
			return err
		}
		if len(samples) == 0 {
			return fmt.Errorf("%s: no samples", f)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		svg := name + ".svg"
		if err := scaleChart(samples, filepath.Join(outDir, svg)); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		figures++
		last := samples[len(samples)-1]
		fmt.Fprintf(&md, "\n## Windows machines, %s\n\n%d Running and Ready after %.0f s.\n\n![machines by phase](%s)\n",
			strings.ReplaceAll(strings.TrimPrefix(name, "scale-"), "-", " "), last.Ready, last.Seconds, svg)
	}

	var trips map[string]map[string]float64
	switch err := readJSON(filepath.Join(dataDir, roundTripsFile), &trips); {
	case err == nil:
		figures++
		if err := roundTripsChart(trips, filepath.Join(outDir, "vsphere-round-trips.svg")); err != nil {
			return err
		}
		md.WriteString("\n## vCenter round trips per machine, by method\n\n100 machines on vcsim through one session.\n\n| phase | method | per machine |\n| --- | --- | --- |\n")
		for _, phase := range sortedKeys(trips) {
			var total float64
			for _, m := range sortedKeys(trips[phase]) {
				fmt.Fprintf(&md, "| %s | %s | %.2f |\n", phase, m, trips[phase][m])
				total += trips[phase][m]
			}
			fmt.Fprintf(&md, "| %s | **all** | **%.2f** |\n", phase, total)
		}
		md.WriteString("\n![round trips](vsphere-round-trips.svg)\n")
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}

	var mem memoryRun
	switch err := readJSON(filepath.Join(dataDir, memoryFile), &mem); {
	case err == nil:
		figures++
		if err := memoryChart(mem, filepath.Join(outDir, "manager-memory.svg")); err != nil {
			return err
		}
		fmt.Fprintf(&md, "\n## capwin-manager's memory, %d machines\n\nPeak RSS %.0f MiB (goal %.0f MiB).\n\n![memory](manager-memory.svg)\n", mem.Machines, mem.PeakMiB, mem.GoalMiB)
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}

	if figures == 0 {
		return fmt.Errorf("no figures in %s: run the benchmarks with %s set to it (make bench)", dataDir, "CAPWIN_BENCH_OUT")
	}
	if text, err := os.ReadFile(benchOut); err == nil {
		fmt.Fprintf(&md, "\n## The benchmarks' output\n\n```\n%s```\n", text)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.WriteFile(filepath.Join(outDir, "report.md"), []byte(md.String()), 0o644)
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
