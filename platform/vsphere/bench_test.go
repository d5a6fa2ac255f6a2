package vsphere

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkProvision100 provisions 100 machines on vcsim through one
// session and reports vCenter round trips per machine to provision, per
// machine per resync once all run, and the sessions opened.
func BenchmarkProvision100(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		_, creds := vcsim(b)
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

		start = sessions.RoundTrips()
		for i := range 100 {
			if _, err := s.Reconcile(ctx, machine(fmt.Sprintf("b%03d", i))); err != nil {
				b.Fatal(err)
			}
		}
		resync := sessions.RoundTrips() - start

		b.ReportMetric(float64(provisioned)/100, "roundtrips/machine")
		b.ReportMetric(float64(resync)/100, "roundtrips/machine/resync")
		b.ReportMetric(float64(sessions.Opened()), "sessions")
	}
}
