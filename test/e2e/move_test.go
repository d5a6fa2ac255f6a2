package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	clusterctl "sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	clusterctlcluster "sigs.k8s.io/cluster-api/cmd/clusterctl/client/cluster"
	clusterctlconfig "sigs.k8s.io/cluster-api/cmd/clusterctl/client/config"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/test/sim"
)

// TestClusterctlMove moves a running cluster (its control-plane machine
// and two Windows machines Running) to a second management cluster with
// clusterctl's own move (the library `clusterctl move` runs, with a
// kubeconfig file for each management API server), while the source's
// controllers run: clusterctl pauses the Cluster, creates its objects in
// the target, deletes them from the source and resumes the Cluster there.
// Nothing is made again: the same VMs (by instance UUID) and provider IDs,
// no clone, no new bootstrap token in the workload cluster (its API server
// is the same for both management clusters). capwin's controllers on the
// target restore what move does not carry, the status: HybridCluster and
// HybridMachines provisioned, the same addresses and conditions. The
// vCenter credentials Secret moved with the cluster (the flavor labels it
// for clusterctl). Then, with capwin's controllers stopped on the source,
// the Windows MachineDeployment scales 2 -> 4 on the target and the new
// machines join.
//
// The simulation has no `clusterctl init`: clusterctlInit does what it
// leaves behind that move reads (the clusterctl label on every CRD, the
// provider inventory), and writes a kubeconfig file for each envtest API
// server into the test's directory, as clusterctl reads them.
func TestClusterctlMove(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	o := newCluster(t, 2)
	waitRunning(t, o, 2)

	target, err := s.StartManagement(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = target.Stop() })
	t.Cleanup(func() {
		if t.Failed() {
			dumpOn(t, target, o)
		}
	})
	dir := t.TempDir()
	from, to := clusterctlInit(t, s, dir, "source"), clusterctlInit(t, target, dir, "target")

	before := machinesOf(t, s, o)
	g.Expect(before).To(HaveLen(3), "the control plane and two Windows machines")
	for name, f := range before {
		g.Expect(f.VMs).To(HaveLen(1), "the VMs of %s", name)
	}
	hcBefore := &infrav1.HybridCluster{}
	g.Expect(s.Management.Client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, hcBefore)).To(Succeed())
	tokensBefore := bootstrapTokens(t, o)
	moved := time.Now()

	c, err := clusterctl.New(ctx, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Move(ctx, clusterctl.MoveOptions{FromKubeconfig: from, ToKubeconfig: to, Namespace: o.Namespace})).To(Succeed())

	// Gone from the source, credentials included.
	err = s.Management.Client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, &clusterv1.Cluster{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Cluster is gone from the source")
	creds := client.ObjectKey{Namespace: o.Namespace, Name: o.Name + "-vsphere-credentials"}
	err = s.Management.Client.Get(ctx, creds, &corev1.Secret{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the credentials Secret is gone from the source")
	g.Expect(target.Management.Client.Get(ctx, creds, &corev1.Secret{})).To(Succeed(), "the credentials Secret on the target")

	// The target's controllers restore every status; nothing is re-made.
	waitRunningOn(t, target, o, 2)
	var after map[string]machineFacts
	g.Eventually(func(g Gomega) {
		after = machinesOf(t, target, o)
		g.Expect(after).To(Equal(before))
		hc := &infrav1.HybridCluster{}
		g.Expect(target.Management.Client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, hc)).To(Succeed())
		g.Expect(hc.Status.Initialization.Provisioned).To(Equal(hcBefore.Status.Initialization.Provisioned))
		g.Expect(hc.Status.FailureDomains).To(Equal(hcBefore.Status.FailureDomains))
		g.Expect(conditionsOf(hc.Status.Conditions)).To(Equal(conditionsOf(hcBefore.Status.Conditions)))
	}, wait, 250*time.Millisecond).Should(Succeed())
	for name, f := range after {
		t.Logf("%s: VMs %v (before %v), provider ID %s (before %s), Machine's %s", name, f.VMs, before[name].VMs, f.ProviderID, before[name].ProviderID, f.MachineProviderID)
	}
	_, clones, _, _ := cloneTasks(t, moved)
	g.Expect(clones).To(BeZero(), "VMs cloned after the move")
	g.Expect(bootstrapTokens(t, o)).To(Equal(tokensBefore), "bootstrap tokens after the move")
	t.Logf("bootstrap tokens in the workload cluster before and after the move: %d, %d", len(tokensBefore), len(bootstrapTokens(t, o)))

	// Only the target's capwin runs from here on.
	g.Expect(s.StopCapwin()).To(Succeed())
	t.Cleanup(func() {
		if err := s.StartCapwin(context.WithoutCancel(ctx)); err != nil {
			t.Errorf("restarting capwin's controllers on the source: %v", err)
		}
	})
	scaleOn(t, target, o, 4)
	ms := waitRunningOn(t, target, o, 4)
	g.Expect(vms(t, o.Name+"-windows-")).To(HaveLen(4))
	for name, m := range before {
		if strings.HasPrefix(name, o.Name+"-windows-") {
			g.Expect(ms).To(ContainElement(HaveField("Spec.ProviderID", m.ProviderID)), "Machine %s kept", name)
		}
	}
	tokens := bootstrapTokens(t, o)
	g.Expect(tokens).To(HaveLen(len(tokensBefore)+2), "one bootstrap token for each new machine")
	t.Logf("after scaling on the target: %d Windows machines Running, %d bootstrap tokens", len(ms), len(tokens))
	noRejections(t)

	deleteClusterOn(t, target, o, func(g Gomega) {
		g.Expect(vms(t, o.Name)).To(BeEmpty(), "VMs left in vCenter")
	})
}

// clusterctlInit leaves on sm's management cluster what `clusterctl init`
// leaves that `clusterctl move` reads: the clusterctl label on every CRD
// (sim's LabelAsClusterctl: move discovers the kinds it moves by it) and
// the providers in the inventory (move checks that the target has the
// source's). It writes a kubeconfig for the management API server into
// dir and returns it.
func clusterctlInit(t testing.TB, sm *sim.Sim, dir, name string) clusterctl.Kubeconfig {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	data, err := sim.Kubeconfig(sm.Management.Config, name)
	g.Expect(err).NotTo(HaveOccurred())
	kc := clusterctl.Kubeconfig{Path: filepath.Join(dir, name+".kubeconfig"), Context: name}
	g.Expect(os.WriteFile(kc.Path, data, 0o600)).To(Succeed())

	g.Expect(sm.LabelAsClusterctl(ctx)).To(Succeed())
	c := sm.Management.Client
	cfg, err := clusterctlconfig.New(ctx, "")
	g.Expect(err).NotTo(HaveOccurred())
	inventory := clusterctlcluster.New(clusterctlcluster.Kubeconfig{Path: kc.Path, Context: kc.Context}, cfg).ProviderInventory()
	g.Expect(inventory.EnsureCustomResourceDefinitions(ctx)).To(Succeed())
	for _, p := range []struct{ name, namespace, kind string }{
		{"cluster-api", "capi-system", string(clusterctlv1.CoreProviderType)},
		{"kubeadm", "capi-kubeadm-bootstrap-system", string(clusterctlv1.BootstrapProviderType)},
		{"kubeadm", "capi-kubeadm-control-plane-system", string(clusterctlv1.ControlPlaneProviderType)},
		{"capwin", sim.ControllerNamespace, string(clusterctlv1.InfrastructureProviderType)},
		{"capwin", sim.ControllerNamespace, string(clusterctlv1.BootstrapProviderType)},
	} {
		provider := clusterctlv1.Provider{ProviderName: p.name, Type: p.kind, Version: "v1.14.2"}
		provider.Namespace = p.namespace
		provider.Name = provider.ManifestLabel()
		provider.Labels = map[string]string{
			clusterctlv1.ClusterctlLabel:     "",
			clusterv1.ProviderNameLabel:      provider.ManifestLabel(),
			clusterctlv1.ClusterctlCoreLabel: clusterctlv1.ClusterctlCoreLabelInventoryValue,
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.namespace}}
		g.Expect(client.IgnoreAlreadyExists(c.Create(ctx, ns))).To(Succeed())
		g.Expect(inventory.Create(ctx, provider)).To(Succeed())
		// The simulation's management cluster is the later tests' too:
		// its inventory holds no provider (LabelAsClusterctl).
		t.Cleanup(func() {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(clusterctlv1.GroupVersion.WithKind("Provider"))
			u.SetNamespace(provider.Namespace)
			u.SetName(provider.Name)
			if err := client.IgnoreNotFound(c.Delete(context.WithoutCancel(ctx), u)); err != nil {
				t.Errorf("deleting the inventory's Provider %s: %v", provider.Name, err)
			}
		})
	}
	return kc
}

// machineFacts is what must not change when a machine moves: its VM and
// provider ID, and the status capwin restores on the target.
type machineFacts struct {
	VMs        []string // instance UUIDs of the VMs named for the machine
	ProviderID string
	// MachineProviderID is the Machine's, which Cluster API copies.
	MachineProviderID string
	Provisioned       bool
	Addresses         []clusterv1.MachineAddress
	Conditions        map[string]string
	NodeJoin          infrav1.NodeBootstrapState
}

// machinesOf returns the facts of each HybridMachine of the cluster on sm,
// by name.
func machinesOf(t testing.TB, sm *sim.Sim, o sim.ClusterOptions) map[string]machineFacts {
	t.Helper()
	hms := &infrav1.HybridMachineList{}
	if err := sm.Management.Client.List(t.Context(), hms, client.InNamespace(o.Namespace)); err != nil {
		t.Fatal(err)
	}
	ms := &clusterv1.MachineList{}
	if err := sm.Management.Client.List(t.Context(), ms, client.InNamespace(o.Namespace)); err != nil {
		t.Fatal(err)
	}
	all := allVMs(t)
	out := map[string]machineFacts{}
	for _, hm := range hms.Items {
		f := machineFacts{
			ProviderID:  hm.Spec.ProviderID,
			Provisioned: ptr.Deref(hm.Status.Initialization.Provisioned, false),
			Addresses:   hm.Status.Addresses,
			Conditions:  conditionsOf(hm.Status.Conditions),
			NodeJoin:    hm.Status.NodeBootstrap.State,
		}
		for _, m := range ms.Items {
			if m.Spec.InfrastructureRef.Name == hm.Name {
				f.MachineProviderID = m.Spec.ProviderID
			}
		}
		for _, vm := range all {
			if vm.Name == hm.Name {
				f.VMs = append(f.VMs, vm.InstanceUUID)
			}
		}
		slices.Sort(f.VMs)
		out[hm.Name] = f
	}
	return out
}

// conditionsOf is each condition's status and reason, by type.
func conditionsOf(cs []metav1.Condition) map[string]string {
	out := map[string]string{}
	for _, c := range cs {
		out[c.Type] = string(c.Status) + " " + c.Reason
	}
	return out
}

// bootstrapTokens returns the names of the bootstrap-token Secrets in the
// workload cluster that capwin made for the cluster's machines (their
// extra group names the machine's progress ConfigMap).
func bootstrapTokens(t testing.TB, o sim.ClusterOptions) []string {
	t.Helper()
	l := &corev1.SecretList{}
	if err := s.Workload.Client.List(t.Context(), l, client.InNamespace(metav1.NamespaceSystem)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, sec := range l.Items {
		if sec.Type == bootstrapapi.SecretTypeBootstrapToken && strings.Contains(string(sec.Data[bootstrapapi.BootstrapTokenExtraGroupsKey]), ":capwin:"+o.Name+"-") {
			out = append(out, sec.Name)
		}
	}
	slices.Sort(out)
	return out
}
