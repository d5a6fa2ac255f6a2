package e2e

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform/vsphere/vspheresim"
	"github.com/capwin/capwin/test/sim"
)

// TestRollingUpdateReplacesEveryVM points the Windows MachineDeployment at a
// new HybridMachineTemplate: Cluster API rolls the Machines over, each new
// VM is cloned from the new template and every old VM is destroyed.
func TestRollingUpdateReplacesEveryVM(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	o := newCluster(t, 2)
	old := waitRunning(t, o, 2)
	oldVMs := vms(t, o.Name+"-windows-")
	g.Expect(oldVMs).To(HaveLen(2))

	tmpl := &infrav1.HybridMachineTemplate{}
	g.Expect(s.Management.Client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name + "-windows"}, tmpl)).To(Succeed())
	next := &infrav1.HybridMachineTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name + "-windows-v2"},
		Spec:       tmpl.Spec,
	}
	next.Spec.Template.Spec.VSphere.NumCPUs = 8
	g.Expect(s.Management.Client.Create(ctx, next)).To(Succeed())
	md := &clusterv1.MachineDeployment{}
	g.Expect(s.Management.Client.Get(ctx, windowsMD(o), md)).To(Succeed())
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Template.Spec.InfrastructureRef.Name = next.Name
	g.Expect(s.Management.Client.Patch(ctx, md, patch)).To(Succeed())

	g.Eventually(func(g Gomega) {
		ms := windowsMachines(ctx, g, o)
		g.Expect(ms).To(HaveLen(2))
		for _, m := range ms {
			g.Expect(m.Status.Phase).To(Equal(string(clusterv1.MachinePhaseRunning)))
			for _, o := range old {
				g.Expect(m.Name).NotTo(Equal(o.Name), "an old Machine is still there")
			}
		}
		now := vms(t, o.Name+"-windows-")
		g.Expect(now).To(HaveLen(2), "VMs in vCenter: %v", now)
		for _, vm := range oldVMs {
			g.Expect(now).NotTo(ContainElement(vm), "old VM %s not destroyed", vm)
		}
	}, wait, 200*time.Millisecond).Should(Succeed())
	// The new VMs were cloned as the new template says.
	for _, cpus := range numCPUs(t, o.Name+"-windows-") {
		g.Expect(cpus).To(Equal(int32(8)))
	}
	noRejections(t)
}

// TestMachineHealthCheckReplacesUnhealthyNode: the first Windows node of
// the cluster never becomes Ready, or becomes Ready and then NotReady; a
// MachineHealthCheck on the Windows MachineDeployment deletes its Machine
// and Cluster API makes a new one, whose node is healthy.
func TestMachineHealthCheckReplacesUnhealthyNode(t *testing.T) {
	for name, failure := range map[string]sim.Failure{"NeverReady": sim.NeverReady, "ReadyThenNotReady": sim.ReadyThenNotReady} {
		t.Run(name, func(t *testing.T) { machineHealthCheck(t, failure) })
	}
}

func machineHealthCheck(t *testing.T, failure sim.Failure) {
	g := NewWithT(t)
	ctx := t.Context()
	o := newCluster(t, 0)

	var sick atomic.Value
	s.Guests.SetFailure(func(node string) sim.Failure {
		if sick.CompareAndSwap(nil, node) {
			return failure
		}
		return sim.Healthy
	})
	t.Cleanup(func() { s.Guests.SetFailure(nil) })

	g.Expect(s.Management.Client.Create(ctx, windowsMHC(o))).To(Succeed())
	scale(t, o, 1)

	var first clusterv1.Machine
	g.Eventually(func(g Gomega) {
		ms := windowsMachines(ctx, g, o)
		g.Expect(ms).To(HaveLen(1))
		g.Expect(ms[0].Status.NodeRef.IsDefined()).To(BeTrue())
		first = ms[0]
	}, wait, 200*time.Millisecond).Should(Succeed())
	g.Expect(sick.Load()).To(Equal(first.Status.NodeRef.Name), "the first node is the sick one")

	var replacement clusterv1.Machine
	g.Eventually(func(g Gomega) {
		ms := windowsMachines(ctx, g, o)
		g.Expect(ms).To(HaveLen(1))
		replacement = ms[0]
		g.Expect(replacement.Name).NotTo(Equal(first.Name), "the unhealthy Machine was replaced")
		g.Expect(conditions.IsTrue(&replacement, clusterv1.MachineReadyCondition)).To(BeTrue())
		// Cluster API patches a Machine's conditions before the rest of
		// its status: Ready can show before status.nodeRef does.
		g.Expect(replacement.Status.NodeRef.IsDefined()).To(BeTrue())
	}, wait, 200*time.Millisecond).Should(Succeed())
	g.Expect(replacement.Status.NodeRef.Name).NotTo(Equal(first.Status.NodeRef.Name))
	node := &corev1.Node{}
	g.Expect(s.Workload.Client.Get(ctx, client.ObjectKey{Name: replacement.Status.NodeRef.Name}, node)).To(Succeed())
	g.Expect(node.Status.Conditions).To(ContainElement(And(HaveField("Type", corev1.NodeReady), HaveField("Status", corev1.ConditionTrue))))
	g.Eventually(func() []string { return vms(t, o.Name+"-windows-") }, wait, 200*time.Millisecond).Should(
		ConsistOf(replacement.Spec.InfrastructureRef.Name), "the sick node's VM is destroyed")
	noRejections(t)
}

// TestControllerRestartMidScaleUp stops capwin's controllers while VMs are
// being cloned and starts them again: every machine ends with exactly one
// VM.
func TestControllerRestartMidScaleUp(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	start := time.Now()
	o := newCluster(t, 0)
	// Clones take two seconds (vcsim runs clones of one template one after
	// the other), so that the controllers stop while a clone they started
	// and recorded runs in vCenter.
	fastClones := vspheresim.DelayTasks(t, map[string]int{"CloneVm": 2000})
	scale(t, o, 4)
	g.Eventually(func(g Gomega) {
		recorded := 0
		for _, hm := range hybridMachines(ctx, g, o) {
			if _, cp := hm.Labels[clusterv1.MachineControlPlaneLabel]; !cp && !hm.Status.Operation.IsZero() && hm.Spec.ProviderID == "" {
				recorded++
			}
		}
		g.Expect(recorded).To(BeNumerically(">=", 1), "a clone recorded in a HybridMachine")
		running, _, _, _ := cloneTasks(t, start)
		g.Expect(running).To(BeNumerically(">=", 1), "a clone running in vCenter")
	}, wait, 20*time.Millisecond).Should(Succeed())
	g.Expect(capwinSessions(t)).To(Equal(1), "one vCenter session for every machine")
	g.Expect(s.StopCapwin()).To(Succeed())
	g.Expect(capwinSessions(t)).To(BeZero(), "the stopped controllers logged out of vCenter")
	time.Sleep(3 * time.Second) // the running clone finishes while nobody watches
	fastClones()
	g.Expect(s.StartCapwin(ctx)).To(Succeed())

	ms := waitRunning(t, o, 4)
	names := vms(t, o.Name+"-windows-")
	g.Expect(names).To(HaveLen(4), "one VM per machine: %v", names)
	for _, m := range ms {
		g.Expect(names).To(ContainElement(m.Spec.InfrastructureRef.Name))
	}
	// A clone request the stop cut short reaches vCenter without its task
	// being recorded; after the restart the machine's clone is asked for
	// again and vCenter refuses it (DuplicateName: VM names are the
	// machines', one per folder) until the first clone ends and the
	// controller finds its VM by instance UUID. No other failure.
	_, succeeded, refused, other := cloneTasks(t, start)
	t.Logf("clones vCenter refused with DuplicateName: %d", refused)
	g.Expect(succeeded).To(BeNumerically(">=", 4), "vCenter's recent tasks hold the clones")
	g.Expect(other).To(BeEmpty(), "clones failed for another reason than a VM of the name existing")
	noRejections(t)
}

// TestPausedClusterChangesNothing: while the Cluster is paused, scaling its
// MachineDeployment creates no Machine and no VM; unpaused, it scales.
func TestPausedClusterChangesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	o := newCluster(t, 1)
	before := waitRunning(t, o, 1)
	vmsBefore := vms(t, o.Name)

	setPaused(t, o, true)
	g.Eventually(func(g Gomega) {
		md := &clusterv1.MachineDeployment{}
		g.Expect(s.Management.Client.Get(ctx, windowsMD(o), md)).To(Succeed())
		g.Expect(conditions.IsTrue(md, clusterv1.PausedCondition)).To(BeTrue())
		for _, hm := range hybridMachines(ctx, g, o) {
			g.Expect(conditions.IsTrue(&hm, clusterv1.PausedCondition)).To(BeTrue(), "HybridMachine %s paused", hm.Name)
		}
	}, wait, 200*time.Millisecond).Should(Succeed())
	scale(t, o, 3)
	g.Consistently(func(g Gomega) {
		ms := windowsMachines(ctx, g, o)
		g.Expect(ms).To(HaveLen(1))
		g.Expect(ms[0].Name).To(Equal(before[0].Name))
		g.Expect(vms(t, o.Name)).To(Equal(vmsBefore))
	}, 5*time.Second, 250*time.Millisecond).Should(Succeed())

	setPaused(t, o, false)
	waitRunning(t, o, 3)
	noRejections(t)
}

// windowsMHC is a MachineHealthCheck of the Windows MachineDeployment that
// replaces a node not Ready for 3 s.
func windowsMHC(o sim.ClusterOptions) *clusterv1.MachineHealthCheck {
	return &clusterv1.MachineHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name + "-windows"},
		Spec: clusterv1.MachineHealthCheckSpec{
			ClusterName: o.Name,
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{
				clusterv1.MachineDeploymentNameLabel: o.Name + "-windows"}},
			Checks: clusterv1.MachineHealthCheckChecks{
				NodeStartupTimeoutSeconds: ptr.To[int32](60),
				UnhealthyNodeConditions: []clusterv1.UnhealthyNodeCondition{
					{Type: corev1.NodeReady, Status: corev1.ConditionFalse, TimeoutSeconds: ptr.To[int32](3)},
					{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, TimeoutSeconds: ptr.To[int32](3)},
				},
			},
		},
	}
}

func setPaused(t testing.TB, o sim.ClusterOptions, paused bool) {
	t.Helper()
	setPausedOn(t, s, o, paused)
}

// setPausedOn pauses or unpauses the cluster; it works in a cleanup too,
// once t's context has ended.
func setPausedOn(t testing.TB, sm *sim.Sim, o sim.ClusterOptions, paused bool) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.WithoutCancel(t.Context())
	c := &clusterv1.Cluster{}
	g.Expect(sm.Management.Client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, c)).To(Succeed())
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Paused = ptr.To(paused)
	g.Expect(sm.Management.Client.Patch(ctx, c, patch)).To(Succeed())
}

// TestClusterDeletionLeavesNothing deletes a cluster with Windows workers:
// every VM, Machine, HybridMachine and Secret of the cluster goes.
func TestClusterDeletionLeavesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	o := newCluster(t, 2)
	waitRunning(t, o, 2)
	g.Expect(vms(t, o.Name)).To(HaveLen(3))

	deleteCluster(t, o)
	g.Eventually(func(g Gomega) {
		g.Expect(hybridMachines(ctx, g, o)).To(BeEmpty())
		ms := &clusterv1.MachineList{}
		g.Expect(s.Management.Client.List(ctx, ms, client.InNamespace(o.Namespace))).To(Succeed())
		g.Expect(ms.Items).To(BeEmpty())
		secrets := &corev1.SecretList{}
		g.Expect(s.Management.Client.List(ctx, secrets, client.InNamespace(o.Namespace))).To(Succeed())
		var left []string
		for _, sec := range secrets.Items {
			left = append(left, sec.Name)
		}
		// The vCenter credentials, capwin's and the CPI's (a
		// ClusterResourceSet's resource), are the user's, applied with the
		// flavor and not owned by the cluster: clusterctl delete leaves
		// them too.
		g.Expect(left).To(ConsistOf(o.Name+"-vsphere-credentials", o.Name+"-vsphere-cpi-credentials"), "Secrets left")
	}, wait, 250*time.Millisecond).Should(Succeed())
	noRejections(t)
}
