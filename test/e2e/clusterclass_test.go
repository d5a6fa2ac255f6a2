package e2e

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/test/sim"
)

// TestClusterClassWindowsWorkers creates a cluster from the
// clusterclass-vsphere-windows flavor, with Cluster API's topology
// reconcilers making its objects from the class: its Windows worker comes
// up and joins on Windows Server 2022, the class's default release. Then
// the cluster's variables ask for Windows Server 2025 (windowsRelease
// ltsc2025, a 2025 VM template) and the l2bridge network mode: the
// topology controller rotates the Windows workers' templates (capwin's
// webhooks derive their defaults again in its dry runs) and deletes the old
// ones, and the worker is replaced by one that joins on build 10.0.26100
// with l2bridge in its bootstrap config. (A real cluster changing its mode
// also changes flannel's Linux side, docs/flavors.md; the simulation has no
// pod network.) Deleting the Cluster leaves no VM, and none of the
// objects the topology made for it.
func TestClusterClassWindowsWorkers(t *testing.T) {
	t.Parallel() // see run
	g := NewWithT(t)
	ctx := t.Context()
	c := s.Management.Client
	o := newClusterFrom(t, s, sim.FlavorTemplate("clusterclass-vsphere-windows"), 1)
	key := client.ObjectKey{Namespace: o.Namespace, Name: o.Name}

	// The topology controller made the control plane (its machine made by
	// the simulation's stand-in for KubeadmControlPlane's controller), the
	// HybridCluster and the MachineDeployments, named as the class says.
	g.Eventually(func(g Gomega) {
		cluster := &clusterv1.Cluster{}
		g.Expect(c.Get(ctx, key, cluster)).To(Succeed())
		g.Expect(cluster.Spec.ControlPlaneRef.Name).To(Equal(o.Name + "-control-plane"))
		g.Expect(cluster.Spec.InfrastructureRef.Name).To(Equal(o.Name))
		hc := &infrav1.HybridCluster{}
		g.Expect(c.Get(ctx, key, hc)).To(Succeed())
		g.Expect(hc.Spec.ControlPlaneEndpoint.Host).To(Equal(sim.ControlPlaneEndpointIP), "the controlPlaneEndpoint patch")
	}, wait, 200*time.Millisecond).Should(Succeed())
	first := waitRunning(t, o, 1)
	g.Expect(windowsNode(t, first[0]).Labels).To(HaveKeyWithValue(corev1.LabelWindowsBuild, "10.0.20348"), "Windows Server 2022's build")
	firstVMs := vms(t, o.Name+"-windows-")
	g.Expect(firstVMs).To(HaveLen(1))
	g.Expect(windowsConfig(t, o, first[0]).Spec.Network.Mode).To(Equal(bootstrapv1.Overlay))

	// The Cluster is Available: its control plane (the stand-in's
	// KubeadmControlPlane), workers and topology.
	g.Eventually(func(g Gomega) {
		cluster := &clusterv1.Cluster{}
		g.Expect(c.Get(ctx, key, cluster)).To(Succeed())
		g.Expect(conditions.IsTrue(cluster, clusterv1.ClusterTopologyReconciledCondition)).To(BeTrue(), "TopologyReconciled")
		g.Expect(conditions.IsTrue(cluster, clusterv1.ClusterAvailableCondition)).To(BeTrue(), "Available: %v", conditions.Get(cluster, clusterv1.ClusterAvailableCondition))
	}, wait, 200*time.Millisecond).Should(Succeed())

	// New values of the cluster's variables roll its Windows workers.
	oldInfra, oldBootstrap := windowsMDTemplates(t, o)
	cluster := &clusterv1.Cluster{}
	g.Expect(c.Get(ctx, key, cluster)).To(Succeed())
	patch := client.MergeFrom(cluster.DeepCopy())
	setVariable(t, cluster, "windowsRelease", "ltsc2025")
	setVariable(t, cluster, "windowsTemplate", sim.Windows2025Template)
	setVariable(t, cluster, "windowsCNIMode", "l2bridge")
	g.Expect(c.Patch(ctx, cluster, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		ms := windowsMachines(ctx, g, o)
		g.Expect(ms).To(HaveLen(1))
		g.Expect(ms[0].Name).NotTo(Equal(first[0].Name), "the old Machine is still there")
		g.Expect(ms[0].Status.Phase).To(Equal(string(clusterv1.MachinePhaseRunning)))
		g.Expect(conditions.IsTrue(&ms[0], clusterv1.MachineReadyCondition)).To(BeTrue())
		now := vms(t, o.Name+"-windows-")
		g.Expect(now).To(HaveLen(1), "VMs in vCenter: %v", now)
		g.Expect(now).NotTo(ContainElement(firstVMs[0]), "the old VM is not destroyed")
	}, wait, 200*time.Millisecond).Should(Succeed())
	next := windowsMachines(ctx, g, o)[0]
	g.Expect(windowsNode(t, next).Labels).To(HaveKeyWithValue(corev1.LabelWindowsBuild, "10.0.26100"), "Windows Server 2025's build")
	hm := hybridMachine(ctx, g, o, next.Spec.InfrastructureRef.Name)
	g.Expect(hm.Spec.OS.WindowsRelease).To(Equal(infrav1.WindowsServer2025))
	g.Expect(hm.Spec.VSphere.Template).To(Equal(sim.Windows2025Template))
	network := windowsConfig(t, o, next).Spec.Network
	g.Expect(network.Mode).To(Equal(bootstrapv1.L2Bridge))
	g.Expect(network.VXLAN).To(BeZero(), "no VXLAN settings left from the class's overlay")
	// The templates the topology replaced are deleted once no MachineSet
	// uses them.
	newInfra, newBootstrap := windowsMDTemplates(t, o)
	g.Expect(newInfra).NotTo(Equal(oldInfra))
	g.Expect(newBootstrap).NotTo(Equal(oldBootstrap))
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: oldInfra}, &infrav1.HybridMachineTemplate{}))).To(BeTrue(), "HybridMachineTemplate %s deleted", oldInfra)
		g.Expect(apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: oldBootstrap}, &bootstrapv1.WindowsKubeadmConfigTemplate{}))).To(BeTrue(), "WindowsKubeadmConfigTemplate %s deleted", oldBootstrap)
	}, wait, 250*time.Millisecond).Should(Succeed())
	noRejections(t)

	// Deleting the Cluster deletes what the topology made for it (its
	// templates, KubeadmControlPlane, MachineDeployments), the CA and
	// kubeconfig Secrets, and every VM; the class's own templates stay.
	own := client.MatchingLabels{clusterv1.ClusterNameLabel: o.Name}
	lists := []client.ObjectList{&infrav1.HybridMachineTemplateList{}, &bootstrapv1.WindowsKubeadmConfigTemplateList{},
		&controlplanev1.KubeadmControlPlaneList{}, &clusterv1.MachineDeploymentList{}, &corev1.SecretList{}}
	for _, l := range lists {
		g.Expect(c.List(ctx, l, client.InNamespace(o.Namespace), own)).To(Succeed())
		g.Expect(meta.LenList(l)).NotTo(BeZero(), "%T of the cluster, labelled with its name", l)
	}
	deleteCluster(t, o)
	for _, l := range lists {
		g.Eventually(func(g Gomega) {
			g.Expect(c.List(ctx, l, client.InNamespace(o.Namespace), own)).To(Succeed())
			g.Expect(meta.LenList(l)).To(BeZero(), "%T of the cluster left", l)
		}, wait, 250*time.Millisecond).Should(Succeed())
	}
	classTemplates := &infrav1.HybridMachineTemplateList{}
	g.Expect(c.List(ctx, classTemplates, client.InNamespace(o.Namespace))).To(Succeed())
	g.Expect(classTemplates.Items).To(HaveLen(2), "the class's Linux and Windows HybridMachineTemplates")
}

// windowsMDTemplates are the names of the templates the Windows
// MachineDeployment's machines are made from.
func windowsMDTemplates(t *testing.T, o sim.ClusterOptions) (infrastructure, bootstrap string) {
	t.Helper()
	md := &clusterv1.MachineDeployment{}
	if err := s.Management.Client.Get(t.Context(), windowsMD(o), md); err != nil {
		t.Fatal(err)
	}
	return md.Spec.Template.Spec.InfrastructureRef.Name, md.Spec.Template.Spec.Bootstrap.ConfigRef.Name
}

// setVariable sets the value of the Cluster's topology variable name.
func setVariable(t *testing.T, cluster *clusterv1.Cluster, name, value string) {
	t.Helper()
	raw, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cluster.Spec.Topology.Variables {
		if cluster.Spec.Topology.Variables[i].Name == name {
			cluster.Spec.Topology.Variables[i].Value = apiextensionsv1.JSON{Raw: raw}
			return
		}
	}
	cluster.Spec.Topology.Variables = append(cluster.Spec.Topology.Variables, clusterv1.ClusterVariable{Name: name, Value: apiextensionsv1.JSON{Raw: raw}})
}

// windowsNode is the Node of a Running Windows Machine.
func windowsNode(t *testing.T, m clusterv1.Machine) *corev1.Node {
	t.Helper()
	n := &corev1.Node{}
	if err := s.Workload.Client.Get(t.Context(), client.ObjectKey{Name: m.Status.NodeRef.Name}, n); err != nil {
		t.Fatal(err)
	}
	return n
}

// windowsConfig is a Windows Machine's WindowsKubeadmConfig.
func windowsConfig(t *testing.T, o sim.ClusterOptions, m clusterv1.Machine) *bootstrapv1.WindowsKubeadmConfig {
	t.Helper()
	cfg := &bootstrapv1.WindowsKubeadmConfig{}
	if err := s.Management.Client.Get(t.Context(), client.ObjectKey{Namespace: o.Namespace, Name: m.Spec.Bootstrap.ConfigRef.Name}, cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}
