package e2e

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkScaleWindows0To50 times a Windows MachineDeployment going from 0
// to 50 Running and Ready machines on the simulation with no boot delay:
// the real Cluster API controllers, capwin's controllers, vcsim and the
// guests. It reports the peak Go heap of this process (the controllers, the
// vCenter simulator and the guests; the API servers are processes of their
// own) and the process's peak RSS.
func BenchmarkScaleWindows0To50(b *testing.B) {
	s.Guests.SetBootDelay(0)
	defer s.Guests.SetBootDelay(200 * time.Millisecond)
	var peakHeap uint64
	for b.Loop() {
		b.StopTimer()
		o := newCluster(b, 0)
		stop := sampleHeap(&peakHeap)
		b.StartTimer()
		start := time.Now()
		scale(b, o, 50)
		waitRunning(b, o, 50)
		elapsed := time.Since(start)
		b.StopTimer()
		stop()
		b.ReportMetric(elapsed.Seconds(), "s/scale-0-to-50")
		deleteCluster(b, o)
		b.StartTimer()
	}
	b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(peakRSS())/(1<<10), "peak-RSS-MiB")
}

// sampleHeap records the largest HeapInuse seen every 50 ms until stop.
func sampleHeap(peak *uint64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			*peak = max(*peak, m.HeapInuse)
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// peakRSS is this process's VmHWM in KiB.
func peakRSS() int {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return 0
}
