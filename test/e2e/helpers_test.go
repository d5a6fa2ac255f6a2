package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform/vsphere"
	"github.com/capwin/capwin/platform/vsphere/vspheresim"
	"github.com/capwin/capwin/test/sim"
)

const wait = 2 * time.Minute

// newCluster generates and applies the vsphere-windows flavor in a new
// namespace and waits for its control plane.
func newCluster(t testing.TB, windows int) sim.ClusterOptions {
	t.Helper()
	return newClusterOn(t, s, windows)
}

// newClusterOn does what newCluster does on the simulation sm, with its
// platform's flavor.
func newClusterOn(t testing.TB, sm *sim.Sim, windows int) sim.ClusterOptions {
	t.Helper()
	return newClusterFrom(t, sm, "", windows)
}

// newClusterFrom does what newCluster does on the simulation sm, with the
// flavor file template (the platform's when empty).
func newClusterFrom(t testing.TB, sm *sim.Sim, template string, windows int) sim.ClusterOptions {
	t.Helper()
	g := NewWithT(t)
	o := sim.ClusterOptions{Namespace: "e2e-" + rand.String(5), Name: "w" + rand.String(4), WindowsReplicas: windows, Template: template}
	_, err := sm.CreateCluster(t.Context(), o)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if t.Failed() {
			dumpOn(t, sm, o)
		}
	})
	g.Eventually(func(g Gomega) {
		c := &clusterv1.Cluster{}
		g.Expect(sm.Management.Client.Get(t.Context(), client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, c)).To(Succeed())
		g.Expect(conditions.IsTrue(c, clusterv1.ClusterControlPlaneInitializedCondition)).To(BeTrue(), "control plane initialised")
	}, wait, 200*time.Millisecond).Should(Succeed())
	return o
}

func windowsMD(o sim.ClusterOptions) client.ObjectKey {
	return client.ObjectKey{Namespace: o.Namespace, Name: o.Name + "-windows"}
}

func scale(t testing.TB, o sim.ClusterOptions, replicas int32) {
	t.Helper()
	scaleOn(t, s, o, replicas)
}

func scaleOn(t testing.TB, sm *sim.Sim, o sim.ClusterOptions, replicas int32) {
	t.Helper()
	g := NewWithT(t)
	md := &clusterv1.MachineDeployment{}
	g.Expect(sm.Management.Client.Get(t.Context(), windowsMD(o), md)).To(Succeed())
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Replicas = &replicas
	g.Expect(sm.Management.Client.Patch(t.Context(), md, patch)).To(Succeed())
}

// windowsMachines returns the Windows MachineDeployment's Machines.
func windowsMachines(ctx context.Context, g Gomega, o sim.ClusterOptions) []clusterv1.Machine {
	return windowsMachinesOn(ctx, g, s, o)
}

func windowsMachinesOn(ctx context.Context, g Gomega, sm *sim.Sim, o sim.ClusterOptions) []clusterv1.Machine {
	l := &clusterv1.MachineList{}
	g.Expect(sm.Management.Client.List(ctx, l, client.InNamespace(o.Namespace),
		client.MatchingLabels{clusterv1.MachineDeploymentNameLabel: o.Name + "-windows"})).To(Succeed())
	return l.Items
}

// waitRunning waits until the Windows MachineDeployment has exactly n
// Machines, all Running and Ready (their Windows Node Ready and healthy),
// and returns them.
func waitRunning(t testing.TB, o sim.ClusterOptions, n int) []clusterv1.Machine {
	t.Helper()
	return waitRunningOn(t, s, o, n)
}

func waitRunningOn(t testing.TB, sm *sim.Sim, o sim.ClusterOptions, n int) []clusterv1.Machine {
	t.Helper()
	var ms []clusterv1.Machine
	NewWithT(t).Eventually(func(g Gomega) {
		ms = windowsMachinesOn(t.Context(), g, sm, o)
		g.Expect(ms).To(HaveLen(n))
		for _, m := range ms {
			g.Expect(m.Status.Phase).To(Equal(string(clusterv1.MachinePhaseRunning)), "Machine %s", m.Name)
			g.Expect(m.Status.NodeRef.IsDefined()).To(BeTrue())
			node := &corev1.Node{}
			g.Expect(sm.Workload.Client.Get(t.Context(), client.ObjectKey{Name: m.Status.NodeRef.Name}, node)).To(Succeed())
			g.Expect(node.Labels).To(HaveKeyWithValue(corev1.LabelOSStable, "windows"))
			g.Expect(node.Spec.ProviderID).To(Equal(m.Spec.ProviderID))
			g.Expect(conditions.IsTrue(&m, clusterv1.MachineReadyCondition)).To(BeTrue(), "Machine %s Ready", m.Name)
		}
	}, wait, 200*time.Millisecond).Should(Succeed())
	return ms
}

// vms returns the names of the VMs in vCenter whose name starts with prefix.
func vms(t testing.TB, prefix string) []string {
	t.Helper()
	var out []string
	for _, vm := range allVMs(t) {
		if strings.HasPrefix(vm.Name, prefix) {
			out = append(out, vm.Name)
		}
	}
	sort.Strings(out)
	return out
}

// allVMs lists vCenter's VMs.
func allVMs(t testing.TB) []vspheresim.VM {
	t.Helper()
	all, err := s.VCenter.VMs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// hybridMachines returns the cluster's HybridMachines.
func hybridMachines(ctx context.Context, g Gomega, o sim.ClusterOptions) []infrav1.HybridMachine {
	l := &infrav1.HybridMachineList{}
	g.Expect(s.Management.Client.List(ctx, l, client.InNamespace(o.Namespace))).To(Succeed())
	return l.Items
}

// expectedRejections are the VMs a test made fail on purpose.
var expectedRejections sync.Map

func noRejections(t testing.TB) {
	t.Helper()
	r := s.Guests.Rejected()
	for vm := range r {
		if _, ok := expectedRejections.Load(vm); ok {
			delete(r, vm)
		}
	}
	if len(r) > 0 {
		t.Errorf("guests refused their user data: %v", r)
	}
}

// dumpOn logs the cluster's objects' status, for a failed test.
func dumpOn(t testing.TB, s *sim.Sim, o sim.ClusterOptions) {
	ctx := context.Background()
	lists := []client.ObjectList{&clusterv1.ClusterList{}, &clusterv1.MachineDeploymentList{}, &clusterv1.MachineSetList{},
		&clusterv1.MachineList{}, &infrav1.HybridClusterList{}, &infrav1.HybridMachineList{}, &bootstrapv1.WindowsKubeadmConfigList{}}
	for _, l := range lists {
		if err := s.Management.Client.List(ctx, l, client.InNamespace(o.Namespace)); err != nil {
			t.Logf("listing %T: %v", l, err)
			continue
		}
		items, _ := meta.ExtractList(l)
		for _, it := range items {
			obj := it.(client.Object)
			u, _ := kruntime.DefaultUnstructuredConverter.ToUnstructured(obj)
			status, _ := yaml.Marshal(u["status"])
			t.Logf("%T %s:\n%s", obj, obj.GetName(), status)
		}
	}
	t.Logf("guests joined %v, refused %v", s.Guests.Joined(), s.Guests.Rejected())
}

// deleteCluster deletes the cluster and waits until the Cluster and every
// one of its VMs are gone.
func deleteCluster(t testing.TB, o sim.ClusterOptions) {
	t.Helper()
	deleteClusterOn(t, s, o, func(g Gomega) {
		g.Expect(vms(t, o.Name)).To(BeEmpty(), "VMs left in vCenter")
	})
}

// deleteClusterOn deletes the cluster on the simulation sm and waits until
// the Cluster is gone and left holds.
func deleteClusterOn(t testing.TB, sm *sim.Sim, o sim.ClusterOptions, left func(g Gomega)) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	c := &clusterv1.Cluster{}
	g.Expect(sm.Management.Client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, c)).To(Succeed())
	g.Expect(sm.Management.Client.Delete(ctx, c)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := sm.Management.Client.Get(ctx, client.ObjectKeyFromObject(c), &clusterv1.Cluster{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Cluster is gone")
		left(g)
	}, wait, 250*time.Millisecond).Should(Succeed())
}

// numCPUs returns the CPU count of each VM whose name starts with prefix,
// as vCenter has it.
func numCPUs(t testing.TB, prefix string) map[string]int32 {
	t.Helper()
	out := map[string]int32{}
	for _, vm := range allVMs(t) {
		if strings.HasPrefix(vm.Name, prefix) && vm.NumCPUs != 0 { // 0: no configuration yet
			out[vm.Name] = vm.NumCPUs
		}
	}
	return out
}

// cloneTasks counts the clone tasks vCenter queued since the given time,
// by state (the simulation's tests run one after another, so these are the
// calling test's); refused counts those that failed because a VM of the
// name existed, and other holds the other failures.
func cloneTasks(t testing.TB, since time.Time) (running, succeeded, refused int, other []string) {
	t.Helper()
	tasks, err := s.VCenter.RecentTasks(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if !strings.HasPrefix(task.DescriptionID, "VirtualMachine.clone") { // vcsim: VirtualMachine.cloneVm
			continue
		}
		if task.QueueTime.Before(since) {
			continue
		}
		switch {
		case task.Running():
			running++
		case task.State == "success":
			succeeded++
		case task.State == "error":
			if task.Fault == "" {
				other = append(other, task.Key+": failed without an error")
				continue
			}
			if task.Fault == "DuplicateName" {
				refused++
				continue
			}
			other = append(other, fmt.Sprintf("%s: %s %s", task.Key, task.Fault, task.Message))
		}
	}
	return running, succeeded, refused, other
}

// capwinSessions is how many sessions capwin's controllers hold in vCenter.
func capwinSessions(t testing.TB) int {
	t.Helper()
	agents, err := s.VCenter.SessionUserAgents(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range agents {
		if a == vsphere.UserAgent {
			n++
		}
	}
	return n
}
