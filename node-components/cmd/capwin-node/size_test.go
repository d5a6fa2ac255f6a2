package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// maxAgentSize is capwin-node.exe's budget: it travels in every image (the
// bootstrap stub fails at once on an image without it).
const maxAgentSize = 25 << 20

// BenchmarkAgentBinarySize builds capwin-node.exe for windows/amd64 as the
// bundle does and reports its size.
func BenchmarkAgentBinarySize(b *testing.B) {
	out := filepath.Join(b.TempDir(), "capwin-node.exe")
	for i := 0; i < b.N; i++ {
		cmd := exec.Command("go", "build", "-trimpath", "-o", out, ".")
		cmd.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
		if data, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("go build: %v\n%s", err, data)
		}
	}
	fi, err := os.Stat(out)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(fi.Size())/(1<<20), "MiB")
	if fi.Size() > maxAgentSize {
		b.Fatalf("capwin-node.exe is %d bytes, over the %d-byte budget", fi.Size(), maxAgentSize)
	}
}
