package e2e

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
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
	// The cluster's Windows Nodes (their names start with the cluster's):
	// the one the crashed run's kubelet registered is the one that joined.
	nodes := &corev1.NodeList{}
	g.Expect(s.Workload.Client.List(ctx, nodes, client.MatchingLabels{corev1.LabelOSStable: "windows"})).To(Succeed())
	var names []string
	for _, n := range nodes.Items {
		if strings.HasPrefix(n.Name, o.Name+"-") {
			names = append(names, n.Name)
			g.Expect(n.Status.Conditions).To(ContainElement(And(HaveField("Type", corev1.NodeReady), HaveField("Status", corev1.ConditionTrue))))
		}
	}
	g.Expect(names).To(ConsistOf(ms[0].Status.NodeRef.Name))
	noRejections(t)
}

const zeros = "0000000000000000000000000000000000000000000000000000000000000000"

// TestTokenExpiredBeforeBootJoins: capwin's controllers are down while a
// machine's VM boots, and its bootstrap token expires (the token cleaner
// deletes it, the bootstrap signer drops its signature): the join fails in
// a way that may pass and cloudbase-init reboots the machine. Once the
// controllers are back, the bootstrap provider makes a new token, the
// infrastructure provider writes the new user data into the VM, and the
// node joins with it at a later boot, without a person.
func TestTokenExpiredBeforeBootJoins(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	o := newCluster(t, 0)
	// The first run cannot reach the API server, so that no run joins with
	// the first token before it expires; the runs after it are 5 s apart,
	// time enough for the controllers to come back within the stub's
	// attempts.
	s.Guests.SetAPIServerUnreachable(func(string) int { return 1 })
	s.Guests.SetBootDelay(2 * time.Second)
	t.Cleanup(func() {
		s.Guests.SetAPIServerUnreachable(nil)
		s.Guests.SetBootDelay(bootDelay)
	})
	scale(t, o, 1)
	var vm, firstToken string
	g.Eventually(func(g Gomega) {
		ms := windowsMachines(ctx, g, o)
		g.Expect(ms).To(HaveLen(1))
		vm = ms[0].Spec.InfrastructureRef.Name
		firstToken = tokenID(ctx, g, o, &ms[0])
		hm := &infrav1.HybridMachine{}
		g.Expect(s.Management.Client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: vm}, hm)).To(Succeed())
		g.Expect(ptr.Deref(hm.Status.Initialization.Provisioned, false)).To(BeTrue(), "the VM runs")
	}, wait, 100*time.Millisecond).Should(Succeed())
	g.Expect(s.StopCapwin()).To(Succeed())
	s.Guests.SetBootDelay(5 * time.Second)
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = s.StartCapwin(ctx)
		}
	})
	// Time passes: the token expires.
	secrets := &corev1.SecretList{}
	g.Expect(s.Workload.Client.List(ctx, secrets, client.InNamespace(metav1.NamespaceSystem))).To(Succeed())
	var expired int
	for i := range secrets.Items {
		sec := &secrets.Items[i]
		if sec.Type != "bootstrap.kubernetes.io/token" {
			continue
		}
		sec.Data["expiration"] = []byte(time.Now().Add(-time.Minute).UTC().Format(time.RFC3339))
		g.Expect(s.Workload.Client.Update(ctx, sec)).To(Succeed())
		expired++
	}
	g.Expect(expired).To(BeNumerically(">", 0))
	g.Eventually(func(g Gomega) {
		g.Expect(s.Workload.Client.List(ctx, secrets, client.InNamespace(metav1.NamespaceSystem))).To(Succeed())
		for _, sec := range secrets.Items {
			g.Expect(sec.Type).NotTo(BeEquivalentTo("bootstrap.kubernetes.io/token"), "the token cleaner deletes expired tokens")
		}
	}, wait, 100*time.Millisecond).Should(Succeed())
	g.Eventually(func() []int { return s.Guests.BootstrapRuns()[vm] }, wait, 100*time.Millisecond).Should(
		ContainElement(payload.StubExitRebootAndRunAgain), "the join with the expired token failed and may pass")
	g.Expect(s.StartCapwin(ctx)).To(Succeed())
	restarted = true
	ms := waitRunning(t, o, 1)
	g.Expect(ms[0].Spec.InfrastructureRef.Name).To(Equal(vm), "the same machine joined, not a replacement")
	g.Expect(tokenID(ctx, g, o, &ms[0])).NotTo(Equal(firstToken), "its bootstrap data carries a new token")
	// The kubelet registers the Node while the agent finishes its last
	// phases.
	g.Eventually(func(g Gomega) {
		runs := s.Guests.BootstrapRuns()[vm]
		g.Expect(runs).NotTo(BeEmpty())
		g.Expect(runs[len(runs)-1]).To(Equal(payload.StubExitJoined))
		g.Expect(runs[:len(runs)-1]).To(HaveEach(payload.StubExitRebootAndRunAgain), "every run before was rebooted to run again")
	}, wait, 100*time.Millisecond).Should(Succeed())
	noRejections(t)
}

// tokenID is the ID of the bootstrap token in the Machine's bootstrap data.
func tokenID(ctx context.Context, g Gomega, o sim.ClusterOptions, m *clusterv1.Machine) string {
	g.Expect(m.Spec.Bootstrap.DataSecretName).NotTo(BeNil())
	sec := &corev1.Secret{}
	g.Expect(s.Management.Client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: *m.Spec.Bootstrap.DataSecretName}, sec)).To(Succeed())
	id := sec.Annotations[bootstrapv1.TokenIDAnnotation]
	g.Expect(id).NotTo(BeEmpty())
	return id
}
