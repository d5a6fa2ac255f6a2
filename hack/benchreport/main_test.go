package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportDrawsEveryChart(t *testing.T) {
	data, out := t.TempDir(), t.TempDir()
	write := func(name string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("scale-0-to-500.json", []phaseSample{
		{Seconds: 0, Phases: map[string]int{}},
		{Seconds: 1, Phases: map[string]int{"Pending": 400, "Provisioning": 100}},
		{Seconds: 2, Phases: map[string]int{"Running": 500}, Ready: 500},
	})
	write(roundTripsFile, map[string]map[string]float64{
		"provision": {"CloneVM_Task": 1, "RetrievePropertiesEx": 6},
		"resync":    {"RetrievePropertiesEx": 0.01},
	})
	write(memoryFile, memoryRun{Machines: 1000, GoalMiB: 200, PeakMiB: 90.4, Samples: []memorySample{{0, 20}, {1, 90.5}, {2, 80}}})
	bench := filepath.Join(data, "bench.txt")
	if err := os.WriteFile(bench, []byte("BenchmarkX 1 2.0 s/op\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	if err := run(data, bench, out); err != nil {
		t.Fatal(err)
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"500 Running and Ready after 2 s", "![machines by phase](scale-0-to-500.svg)",
		"| provision | CloneVM_Task | 1.00 |", "| provision | **all** | **7.00** |",
		"Peak RSS 90 MiB (goal 200 MiB)", "BenchmarkX 1 2.0 s/op",
	} {
		if !strings.Contains(string(report), want) {
			t.Errorf("report.md lacks %q:\n%s", want, report)
		}
	}
	for svg, title := range map[string]string{
		"scale-0-to-500.svg":      "Windows Machines by phase",
		"vsphere-round-trips.svg": "vCenter round trips per machine",
		"manager-memory.svg":      "capwin-manager resident memory",
	} {
		b, err := os.ReadFile(filepath.Join(out, svg))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b), "<?xml") || !strings.Contains(string(b), "<svg") {
			t.Errorf("%s is not an SVG", svg)
		}
		if !strings.Contains(string(b), ">"+title) {
			t.Errorf("%s lacks its title %q", svg, title)
		}
	}
}

func TestReportWithoutFiguresSaysSo(t *testing.T) {
	if err := run(t.TempDir(), filepath.Join(t.TempDir(), "none.txt"), t.TempDir()); err == nil {
		t.Error("a report of no figures was written")
	}
}
