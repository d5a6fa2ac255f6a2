package e2e

import (
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/capwin/capwin/bootstrap/payload"
	"github.com/capwin/capwin/test/sim"
)

// faultFirst gives the first Windows node that boots fault, and the others
// none, until the test ends; it returns the node's name once it booted.
func faultFirst(t *testing.T, fault sim.Fault) *atomic.Value {
	var first atomic.Value
	s.Guests.SetFault(func(node string) sim.Fault {
		if first.CompareAndSwap(nil, node) {
			return fault
		}
		return sim.NoFault
	})
	t.Cleanup(func() { s.Guests.SetFault(nil) })
	return &first
}

// TestCrashMidJoinResumes: the machine loses power while the agent waits
// for its Node, after the kubelet started; at the next boot cloudbase-init
// runs the stub again, the agent continues where it stopped, and the node
// is Ready with one Node object.
func TestCrashMidJoinResumes(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	o := newCluster(t, 0)
	faultFirst(t, sim.CrashMidJoin)
	scale(t, o, 1)
	ms := waitRunning(t, o, 1)
	vm := ms[0].Spec.InfrastructureRef.Name
	g.Eventually(func() []int { return s.Guests.BootstrapRuns()[vm] }, wait, 200*time.Millisecond).Should(
		Equal([]int{sim.StubCrashed, payload.StubExitJoined}), "a run cut short, then one that joined")
	nodes := &corev1.NodeList{}
	g.Expect(s.Workload.Client.List(ctx, nodes)).To(Succeed())
	var named int
	for _, n := range nodes.Items {
		if n.Name == ms[0].Status.NodeRef.Name {
			named++
			g.Expect(n.Status.Conditions).To(ContainElement(And(HaveField("Type", corev1.NodeReady), HaveField("Status", corev1.ConditionTrue))))
		}
	}
	g.Expect(named).To(Equal(1))
	noRejections(t)
}

const zeros = "0000000000000000000000000000000000000000000000000000000000000000"

