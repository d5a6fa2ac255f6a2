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
	defer s.Guests.SetBootDelay(bootDelay)
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
	b.ReportMetric(float64(peakRSS("self"))/(1<<10), "peak-RSS-MiB")
	apiservers, etcds := childrenPeakRSS("kube-apiserver"), childrenPeakRSS("etcd")
	b.ReportMetric(float64(apiservers)/(1<<10), "apiservers-peak-RSS-MiB")
	b.ReportMetric(float64(etcds)/(1<<10), "etcds-peak-RSS-MiB")
}

// childrenPeakRSS sums the VmHWM, in KiB, of this process's children named
// comm: the management and workload clusters' kube-apiservers and etcds,
// which envtest runs as child processes.
func childrenPeakRSS(comm string) int {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	self := strconv.Itoa(os.Getpid())
	var sum int
	for _, d := range dirs {
		pid := d.Name()
		if _, err := strconv.Atoi(pid); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		open, close := strings.IndexByte(string(stat), '('), strings.LastIndexByte(string(stat), ')')
		if open < 0 || close < open {
			continue
		}
		fields := strings.Fields(string(stat)[close+1:])
		if string(stat)[open+1:close] != comm || len(fields) < 2 || fields[1] != self {
			continue
		}
		sum += peakRSS(pid)
	}
	return sum
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

// peakRSS is the VmHWM of process pid ("self": this one) in KiB.
func peakRSS(pid string) int {
	f, err := os.Open("/proc/" + pid + "/status")
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
