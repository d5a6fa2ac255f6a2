package controllers_test

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform/vsphere"
	"github.com/capwin/capwin/platform/vsphere/vspheresim"
)

// BenchmarkProvision100HybridMachines creates 100 Windows HybridMachines
// against vcsim through the real reconcilers and reports the wall time to
// all provisioned, vCenter round trips per machine to provision, sessions
// opened, round trips per machine for one resync of every machine, and
// round trips per joining machine per minute (no node joins here). Run it
// with -benchtime 1x: one round is 100 machines.
func BenchmarkProvision100HybridMachines(b *testing.B) {
	for range b.N {
		bt := b
		v := vspheresim.StartT(bt)
		sessions := vsphere.NewSessions()
		ns := newNamespace(bt)
		startControllersPolling(bt, sessions, ns, 0)
		cluster(bt, v, ns, nil)
		markInfrastructureProvisioned(bt, ns)
		start := sessions.RoundTrips()

		began := time.Now()
		for i := range 100 {
			machine(bt, ns, fmt.Sprintf("b%03d", i), "DC0_H0_VM0")
		}
		for provisioned(b, ns) < 100 {
			time.Sleep(100 * time.Millisecond)
		}
		wall := time.Since(began)
		provisionRTs := sessions.RoundTrips() - start

		// One resync: every machine reconciled once more.
		start = sessions.RoundTrips()
		list := &infrav1.HybridMachineList{}
		if err := env.Client.List(b.Context(), list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		for i := range list.Items {
			hm := &list.Items[i]
			patch := client.MergeFrom(hm.DeepCopy())
			hm.Annotations = map[string]string{"resync": "1"}
			if err := env.Client.Patch(b.Context(), hm, patch); err != nil {
				b.Fatal(err)
			}
		}
		time.Sleep(3 * time.Second)
		resyncRTs := sessions.RoundTrips() - start

		// The machines' nodes never join, and their cluster has no
		// workload cluster to watch reports in: each is looked at every
		// progressPoll, the fallback, for its node's report.
		start = sessions.RoundTrips()
		const window = 20 * time.Second
		time.Sleep(window)
		joiningRTs := sessions.RoundTrips() - start

		b.ReportMetric(wall.Seconds(), "s-to-provision-100")
		b.ReportMetric(float64(joiningRTs)/100/window.Minutes(), "roundtrips/machine/min-joining")
		b.ReportMetric(float64(provisionRTs)/100, "roundtrips/machine")
		b.ReportMetric(float64(resyncRTs)/100, "roundtrips/machine/resync")
		b.ReportMetric(float64(sessions.Opened()), "sessions")
	}
}

func provisioned(b *testing.B, ns string) int {
	list := &infrav1.HybridMachineList{}
	if err := env.Client.List(b.Context(), list, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, hm := range list.Items {
		if ptr.Deref(hm.Status.Initialization.Provisioned, false) {
			n++
		}
	}
	return n
}
