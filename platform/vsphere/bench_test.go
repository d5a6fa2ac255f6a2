package vsphere

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkProvision100 provisions 100 machines on vcsim through one
// session and reports vCenter round trips per machine to provision, per
// machine per resync once all run (their guests reporting an address, the
// nodes joined), and the sessions opened. It fails when a resync costs
// more than 0.05 round trips per machine or more than one session opened.
func BenchmarkProvision100(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		v, creds := vcsim(b)
		sessions := NewSessions()
		ctx := b.Context()
		b.StartTimer()

		s, err := sessions.Get(ctx, creds)
		if err != nil {
			b.Fatal(err)
		}
		start := sessions.RoundTrips()
		for i := range 100 {
			// A requeue longer than vcsim's clone task, as the controller's
			// requeue (seconds) is longer than a real one's progress steps.
			provision(ctx, b, s, machine(fmt.Sprintf("b%03d", i)), 20*time.Millisecond)
		}
		provisioned := sessions.RoundTrips() - start

		b.StopTimer()
		names := make([]string, 100)
		for i := range names {
			names[i] = fmt.Sprintf("b%03d", i)
		}
		running := provisionRunning(b, v, s, names...)
		b.StartTimer()
		start = sessions.RoundTrips()
		for _, m := range running {
			if _, err := s.Reconcile(ctx, m); err != nil {
				b.Fatal(err)
			}
		}
		resync := sessions.RoundTrips() - start

		b.ReportMetric(float64(provisioned)/100, "roundtrips/machine")
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
