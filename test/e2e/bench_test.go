package e2e

import (
	"bufio"
	"cmp"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	"github.com/capwin/capwin/test/benchdata"
	"github.com/capwin/capwin/test/sim"
)

// BenchmarkScaleWindows0To50 times a Windows MachineDeployment going from 0
// to 50 Running and Ready machines on the simulation with no boot delay, and
// back to 0 with none of their VMs left:
// the real Cluster API controllers, capwin's controllers, vcsim and the
// guests. It reports the peak Go heap of this process (the controllers, the
// vCenter simulator and the guests; the API servers are processes of their
// own) and the process's peak RSS.
func BenchmarkScaleWindows0To50(b *testing.B) { benchScale(b, 50) }

// BenchmarkScaleWindows0To500 does what BenchmarkScaleWindows0To50 does,
// for 500 machines, within 15 minutes each way.
func BenchmarkScaleWindows0To500(b *testing.B) { benchScale(b, 500) }

func benchScale(b *testing.B, n int) {
	s.Guests.SetBootDelay(0)
	defer s.Guests.SetBootDelay(bootDelay)
	var peakHeap uint64
	for b.Loop() {
		b.StopTimer()
		o := newCluster(b, 0)
		stop := sampleHeap(&peakHeap)
		b.StartTimer()
		start := time.Now()
		scale(b, o, int32(n))
		phases := followPhases(b, o, n, start, 15*time.Minute)
		waitRunning(b, o, n)
		elapsed := time.Since(start)
		benchdata.Write(b, fmt.Sprintf("scale-0-to-%d.json", n), phases)
		b.StopTimer()
		stop()
		b.ReportMetric(elapsed.Seconds(), fmt.Sprintf("s/scale-0-to-%d", n))
		// And back to 0, with none of their VMs left in vCenter.
		down := time.Now()
		scale(b, o, 0)
		NewWithT(b).Eventually(func(g Gomega) {
			g.Expect(windowsMachines(b.Context(), g, o)).To(BeEmpty())
			g.Expect(vms(b, o.Name+"-wi-")).To(BeEmpty())
		}, 15*time.Minute, max(time.Second, time.Duration(n)*10*time.Millisecond)).Should(Succeed())
		b.ReportMetric(time.Since(down).Seconds(), fmt.Sprintf("s/scale-%d-to-0", n))
		deleteCluster(b, o)
		b.StartTimer()
	}
	b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(peakRSS("self"))/(1<<10), "peak-RSS-MiB")
	apiservers, etcds := childrenPeakRSS("kube-apiserver"), childrenPeakRSS("etcd")
	b.ReportMetric(float64(apiservers)/(1<<10), "apiservers-peak-RSS-MiB")
	b.ReportMetric(float64(etcds)/(1<<10), "etcds-peak-RSS-MiB")
}

// followPhases samples the Windows Machines' phases from start until n of
// them are Running and Ready, and returns the samples. It samples every
// 2 ms per machine (200 ms for 50 machines, 1 s for 500), so that the
// sampling of many machines does not weigh on what it measures.
func followPhases(b *testing.B, o sim.ClusterOptions, n int, start time.Time, within time.Duration) []benchdata.PhaseSample {
	b.Helper()
	var samples []benchdata.PhaseSample
	for {
		l := &clusterv1.MachineList{}
		err := s.Management.Client.List(b.Context(), l, client.InNamespace(o.Namespace),
			client.MatchingLabels{clusterv1.MachineDeploymentNameLabel: o.Name + "-windows"})
		if err != nil {
			b.Fatal(err)
		}
		sample := benchdata.PhaseSample{Seconds: time.Since(start).Seconds(), Phases: map[string]int{}}
		for i := range l.Items {
			m := &l.Items[i]
			sample.Phases[cmp.Or(m.Status.Phase, "None")]++
			if m.Status.Phase == string(clusterv1.MachinePhaseRunning) && conditions.IsTrue(m, clusterv1.MachineReadyCondition) {
				sample.Ready++
			}
		}
		samples = append(samples, sample)
		if sample.Ready == n && len(l.Items) == n {
			return samples
		}
		if time.Since(start) > within {
			b.Fatalf("%d of %d Windows machines Running and Ready after %s: %v", sample.Ready, n, within, sample.Phases)
		}
		time.Sleep(max(200*time.Millisecond, time.Duration(n)*2*time.Millisecond))
	}
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
