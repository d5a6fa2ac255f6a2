package e2e

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/bootstrap/payload"
	"github.com/capwin/capwin/test/sim"
)

// TestWrongCAHashIsRefused: a node whose configuration pins another CA is
// refused by discovery, which fails for good; the node reports it to the
// cluster it found (cluster-info signed with its token), and its
// HybridMachine says why.
func TestWrongCAHashIsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	o := newCluster(t, 0)
	faultFirst(t, sim.WrongCAHash)
	scale(t, o, 1)
	var vm string
	g.Eventually(func(g Gomega) {
		ms := windowsMachines(ctx, g, o)
		g.Expect(ms).To(HaveLen(1))
		vm = ms[0].Spec.InfrastructureRef.Name
		expectedRejections.Store(vm, true)
		g.Expect(s.Guests.Rejected()).To(HaveKeyWithValue(vm, ContainSubstring("sha256:"+zeros)))
	}, wait, 200*time.Millisecond).Should(Succeed())
	g.Expect(s.Guests.BootstrapRuns()[vm]).To(Equal([]int{payload.StubExitFailed}), "a CA mismatch is not retried")
	g.Eventually(func(g Gomega) {
		hm := hybridMachine(ctx, g, o, vm)
		g.Expect(hm.Status.NodeBootstrap.Phase).To(Equal("discovery"))
		g.Expect(hm.Status.NodeBootstrap.Message).To(ContainSubstring("sha256:" + zeros))
		c := condition(hm, "NodeJoined")
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal("DiscoveryFailed"))
		ready := condition(hm, "Ready")
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Message).To(ContainSubstring("sha256:" + zeros))
	}, wait, 200*time.Millisecond).Should(Succeed())
	machine := &clusterv1.Machine{}
	g.Expect(s.Management.Client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: vm}, machine)).To(Succeed())
	g.Expect(machine.Status.NodeRef.IsDefined()).To(BeFalse())
}

func hybridMachine(ctx context.Context, g Gomega, o sim.ClusterOptions, name string) *infrav1.HybridMachine {
	hm := &infrav1.HybridMachine{}
	g.Expect(s.Management.Client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: name}, hm)).To(Succeed())
	return hm
}

func condition(hm *infrav1.HybridMachine, t string) *metav1.Condition {
	return meta.FindStatusCondition(hm.Status.Conditions, t)
}
