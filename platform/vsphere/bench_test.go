package vsphere

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmware/govmomi/vim25/soap"

	"github.com/capwin/capwin/platform/vsphere/vspheresim"
	"github.com/capwin/capwin/test/benchdata"
)

// BenchmarkProvision100 provisions 100 machines on vcsim through one
// session, ten at a time as the manager's reconciles run (--concurrency
// 10), and reports vCenter round trips per machine to provision, the same
// for ten machines made one at a time (where no read is shared), per
// machine per resync once all run (their guests reporting an address, the
// nodes joined), and the sessions opened. It fails when provisioning costs
// more than 3 round trips per machine, a resync more than 0.05, or more
// than one session opened.
func BenchmarkProvision100(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		v, creds := vcsim(b)
		sessions := NewSessions()
		calls := &methodCounts{counts: map[string]int{}}
		sessions.Transport = func(rt soap.RoundTripper) soap.RoundTripper { calls.RoundTripper = rt; return calls }
		ctx := b.Context()
		b.StartTimer()

		s, err := sessions.Get(ctx, creds)
		if err != nil {
			b.Fatal(err)
		}
		// A requeue longer than vcsim's clone task, as the controller's
		// requeue (seconds) is longer than a real one's progress steps.
		const requeue = 20 * time.Millisecond
		start := sessions.RoundTrips()
		calls.reset()
		work := make(chan string)
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				for name := range work {
					provision(ctx, b, s, machine(name), requeue)
				}
			})
		}
		for i := range 100 {
			work <- fmt.Sprintf("b%03d", i)
		}
		close(work)
		wg.Wait()
		provisioned := sessions.RoundTrips() - start
		provisionCalls := calls.reset()
		// Ten more, one at a time: no read is shared.
		start = sessions.RoundTrips()
		calls.reset()
		for i := range 10 {
			provision(ctx, b, s, machine(fmt.Sprintf("serial%d", i)), requeue)
		}
		serial := sessions.RoundTrips() - start

		b.StopTimer()
		names := make([]string, 100)
		for i := range names {
			names[i] = fmt.Sprintf("b%03d", i)
		}
		running := provisionRunning(b, v, s, names...)
		b.StartTimer()
		start = sessions.RoundTrips()
		calls.reset()
		for _, m := range running {
			if _, err := s.Reconcile(ctx, m); err != nil {
				b.Fatal(err)
			}
		}
		resync := sessions.RoundTrips() - start
		resyncCalls := calls.reset()
		benchdata.Write(b, "vsphere-round-trips.json", map[string]map[string]float64{
			"provision": perMachine(provisionCalls, 100), "resync": perMachine(resyncCalls, 100)})

		b.ReportMetric(float64(provisioned)/100, "roundtrips/machine")
		b.ReportMetric(float64(serial)/10, "roundtrips/machine/serial")
		if r := float64(provisioned) / 100; r > 3 {
			b.Errorf("provisioning took %.2f round trips per machine, want at most 3", r)
		}
		b.ReportMetric(float64(resync)/100, "roundtrips/machine/resync")
		b.ReportMetric(float64(sessions.Opened()), "sessions")
		if r := float64(resync) / 100; r > 0.05 {
			b.Errorf("a resync took %.2f round trips per machine, want at most 0.05", r)
		}
		if n := sessions.Opened(); n > 1 {
			b.Errorf("%d sessions opened for one credential", n)
		}
	}
}

// countedSession starts vcsim and logs in to it through a transport that
// counts capwin's calls by method.
func countedSession(t testing.TB) (*vspheresim.VCenter, *Sessions, *Session, *methodCounts) {
	t.Helper()
	v, creds := vcsim(t)
	sessions := NewSessions()
	calls := &methodCounts{counts: map[string]int{}}
	sessions.Transport = func(rt soap.RoundTripper) soap.RoundTripper { calls.RoundTripper = rt; return calls }
	s, err := sessions.Get(t.Context(), creds)
	if err != nil {
		t.Fatal(err)
	}
	return v, sessions, s, calls
}

// methodCounts counts the vCenter calls that pass through it by method.
type methodCounts struct {
	soap.RoundTripper
	mu     sync.Mutex
	counts map[string]int
}

func (m *methodCounts) RoundTrip(ctx context.Context, req, res soap.HasFault) error {
	// govmomi's request bodies are named after their method: CloneVM_TaskBody.
	method := strings.TrimSuffix(reflect.TypeOf(req).Elem().Name(), "Body")
	m.mu.Lock()
	m.counts[method]++
	m.mu.Unlock()
	return m.RoundTripper.RoundTrip(ctx, req, res)
}

// reset returns the counts so far and starts again from zero.
func (m *methodCounts) reset() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.counts
	m.counts = map[string]int{}
	return c
}

func perMachine(counts map[string]int, machines int) map[string]float64 {
	out := make(map[string]float64, len(counts))
	for method, n := range counts {
		out[method] = float64(n) / float64(machines)
	}
	return out
}
