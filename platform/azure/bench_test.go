package azure_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/capwin/capwin/platform"
	"github.com/capwin/capwin/platform/azure"
	"github.com/capwin/capwin/platform/azure/azuresim"
)

// The goals BenchmarkProvision100 checks.
const (
	// maxCallsPerMachine is the most ARM requests, polls aside, that
	// making one machine may take.
	maxCallsPerMachine = 6
	// maxCallsPerResync is the most ARM requests per machine that a
	// resync of running machines may take.
	maxCallsPerResync = 0.1
)

// BenchmarkProvision100 makes 100 Windows machines on the simulated Azure
// with ten at a time in flight (as ten reconcile workers would), each
// long-running operation taking one poll, under a simulated limit of 10
// writes a second (the write budget ARM refills for a principal), with
// capwin's default write limit. It reports ARM requests per machine to
// provision (polls apart), per machine per resync once all run, and the
// writes answered 429; and it fails when a figure misses its goal.
func BenchmarkProvision100(b *testing.B) {
	const machines, workers = 100, 10
	for b.Loop() {
		b.StopTimer()
		e := newEnv(b, azuresim.Options{Polls: 1, WritesPerSecond: 10})
		p := e.platformWith(b, azure.Options{})
		ms := make([]*platform.Machine, machines)
		for i := range ms {
			ms[i] = windowsMachine(fmt.Sprintf("b%03d", i))
		}
		before := e.cloud.Calls()
		b.StartTimer()

		start := time.Now()
		each(b, ms, workers, func(m *platform.Machine) error {
			for {
				st, err := p.EnsureMachine(b.Context(), m)
				if err != nil {
					return err
				}
				m.HybridMachine.Status.Operation = st.Operation
				if st.Operation.IsZero() && st.Exists {
					m.HybridMachine.Status.Initialization.Provisioned = ptr.To(true)
					return nil
				}
			}
		})
		elapsed := time.Since(start)
		made := e.cloud.Calls()
		each(b, ms, workers, func(m *platform.Machine) error {
			st, err := p.EnsureMachine(b.Context(), m)
			if err == nil && (!st.Running || len(st.Addresses) == 0) {
				err = fmt.Errorf("the resync of %s reports %+v", m.HybridMachine.Name, st)
			}
			return err
		})
		b.StopTimer()
		resynced := e.cloud.Calls()

		calls, polls := since(before, made)
		resync, _ := since(made, resynced)
		perMachine, perResync := float64(calls)/machines, float64(resync)/machines
		b.ReportMetric(perMachine, "calls/machine")
		b.ReportMetric(float64(polls)/machines, "polls/machine")
		b.ReportMetric(perResync, "calls/machine/resync")
		b.ReportMetric(float64(e.cloud.Throttled()), "throttled")
		b.ReportMetric(elapsed.Seconds(), "s/provision-100")
		if n := len(e.cloud.VirtualMachines()); n != machines {
			b.Fatalf("%d VMs, want %d", n, machines)
		}
		if perMachine > maxCallsPerMachine {
			b.Errorf("%.2f ARM requests per machine to provision (polls apart), want at most %d: %v", perMachine, maxCallsPerMachine, made)
		}
		if perResync > maxCallsPerResync {
			b.Errorf("%.2f ARM requests per machine per resync, want at most %.2f", perResync, maxCallsPerResync)
		}
		if n := e.cloud.Throttled(); n != 0 {
			b.Errorf("%d writes were throttled under 10 writes a second, want none", n)
		}
		b.StartTimer()
	}
}

// each runs f on every machine, workers at a time, and fails b on the
// first error.
func each(b *testing.B, ms []*platform.Machine, workers int, f func(*platform.Machine) error) {
	b.Helper()
	work := make(chan *platform.Machine)
	errs := make(chan error, len(ms))
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for m := range work {
				if err := f(m); err != nil {
					errs <- err
				}
			}
		})
	}
	for _, m := range ms {
		work <- m
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// since is how many requests, and polls among them, arrived between two
// counts of Cloud.Calls.
func since(before, after map[string]int) (calls, polls int) {
	for api, n := range after {
		d := n - before[api]
		if strings.HasSuffix(api, ":poll") {
			polls += d
		} else {
			calls += d
		}
	}
	return calls, polls
}
