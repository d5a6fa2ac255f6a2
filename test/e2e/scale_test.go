package e2e

import (
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/bootstrap/payload"
)

// TestScaleWindowsZeroToFiveToZero scales the flavor's Windows
// MachineDeployment up to five and back to none: five VMs, five Windows
// Nodes, then no VM, Node, HybridMachine, WindowsKubeadmConfig or bootstrap
// data Secret left. The first node's join finds the API server silent
// twice: cloudbase-init reboots it twice and it joins on the third run.
func TestScaleWindowsZeroToFiveToZero(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	o := newCluster(t, 0)

	var first atomic.Value
	s.Guests.SetAPIServerUnreachable(func(node string) int {
		if first.CompareAndSwap(nil, node) || first.Load() == node {
			return 2
		}
		return 0
	})
	t.Cleanup(func() { s.Guests.SetAPIServerUnreachable(nil) })

	scale(t, o, 5)
	ms := waitRunning(t, o, 5)
	g.Expect(vms(t, o.Name+"-windows-")).To(HaveLen(5))
	// A Machine is Running once its Node is, which the kubelet registers
	// while the agent's join still runs its last phases.
	g.Eventually(func(g Gomega) {
		runs := map[string][]int{}
		for vm, codes := range s.Guests.BootstrapRuns() {
			if strings.HasPrefix(vm, o.Name+"-windows-") {
				runs[vm] = codes
			}
		}
		g.Expect(runs).To(HaveLen(5))
		g.Expect(slices.Collect(maps.Values(runs))).To(ConsistOf(
			[]int{payload.StubExitRebootAndRunAgain, payload.StubExitRebootAndRunAgain, payload.StubExitJoined},
			[]int{payload.StubExitJoined}, []int{payload.StubExitJoined}, []int{payload.StubExitJoined}, []int{payload.StubExitJoined}),
			"the stub's exit codes by VM")
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	var nodes []string
	for _, m := range ms {
		nodes = append(nodes, m.Status.NodeRef.Name)
		node := &corev1.Node{}
		g.Expect(s.Workload.Client.Get(ctx, client.ObjectKey{Name: m.Status.NodeRef.Name}, node)).To(Succeed())
		g.Expect(node.Labels).To(HaveKeyWithValue(corev1.LabelWindowsBuild, "10.0.20348"))
		g.Expect(node.Spec.Taints).To(ContainElement(HaveField("Key", "os")))
		// The cloud controller manager initialised the Node: the address
		// VMware Tools reported (the kubelet's --node-ip), the instance
		// type, the taint gone.
		g.Expect(node.Spec.Taints).NotTo(ContainElement(HaveField("Key", cloudproviderapi.TaintExternalCloudProvider)))
		g.Expect(node.Status.Addresses).To(ContainElement(HaveField("Type", corev1.NodeInternalIP)))
		g.Expect(node.Labels).To(HaveKeyWithValue(corev1.LabelInstanceTypeStable, "vsphere-vm.cpu-4.mem-8gb.os-unknown"))
	}
	// The flavor's add-ons (the RuntimeClasses and flannel's Linux side)
	// were applied to this cluster by Cluster API's ClusterResourceSets.
	// The workload API server is shared by the simulation's clusters, so
	// the binding of this cluster says what was applied for it.
	g.Eventually(func(g Gomega) {
		b := &addonsv1.ClusterResourceSetBinding{}
		g.Expect(s.Management.Client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, b)).To(Succeed())
		applied := map[string]bool{}
		for _, set := range b.Spec.Bindings {
			for _, r := range set.Resources {
				applied[set.ClusterResourceSetName+"/"+r.Name] = ptr.Deref(r.Applied, false)
			}
		}
		g.Expect(applied).To(Equal(map[string]bool{
			o.Name + "-windows-runtimeclasses/" + o.Name + "-windows-runtimeclasses": true,
			o.Name + "-windows-node-rbac/" + o.Name + "-windows-node-rbac":           true,
			o.Name + "-flannel/" + o.Name + "-flannel":                               true,
			o.Name + "-vsphere-cpi/" + o.Name + "-vsphere-cpi-credentials":           true,
			o.Name + "-vsphere-cpi/" + o.Name + "-vsphere-cpi":                       true,
		}))
	}, wait, 200*time.Millisecond).Should(Succeed())
	rc := &nodev1.RuntimeClass{}
	g.Expect(s.Workload.Client.Get(ctx, client.ObjectKey{Name: "windows-2022"}, rc)).To(Succeed())
	g.Expect(rc.Scheduling.NodeSelector).To(HaveKeyWithValue(corev1.LabelWindowsBuild, "10.0.20348"))
	ds := &appsv1.DaemonSet{}
	g.Expect(s.Workload.Client.Get(ctx, client.ObjectKey{Namespace: "kube-flannel", Name: "kube-flannel-ds"}, ds)).To(Succeed())
	g.Expect(ds.Spec.Template.Spec.NodeSelector).To(HaveKeyWithValue(corev1.LabelOSStable, "linux"))
	// A joined Windows node's own identity, with which capwin-node runs
	// kube-proxy and flanneld, may make the requests only RBAC grants a
	// node (docs/node-identity.md): the workload API server authorizes
	// with Node,RBAC as kubeadm's does, and the bindings came from the
	// ClusterResourceSets.
	cfg := rest.CopyConfig(s.Workload.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:node:" + nodes[0], Groups: []string{"system:nodes", "system:authenticated"}}
	asNode, err := client.New(cfg, client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(asNode.List(ctx, &discoveryv1.EndpointSliceList{})).To(Succeed(), "kube-proxy's EndpointSlices")
	g.Expect(asNode.List(ctx, &networkingv1.ServiceCIDRList{})).To(Succeed(), "kube-proxy's ServiceCIDRs")
	g.Expect(asNode.List(ctx, &corev1.NodeList{})).To(Succeed(), "flanneld's Nodes")

	scale(t, o, 0)
	g.Eventually(func(g Gomega) {
		g.Expect(windowsMachines(ctx, g, o)).To(BeEmpty())
		g.Expect(vms(t, o.Name+"-windows-")).To(BeEmpty(), "Windows VMs left in vCenter")
		hms := &infrav1.HybridMachineList{}
		g.Expect(s.Management.Client.List(ctx, hms, client.InNamespace(o.Namespace))).To(Succeed())
		g.Expect(hms.Items).To(HaveLen(1), "only the control plane's HybridMachine is left")
		configs := &bootstrapv1.WindowsKubeadmConfigList{}
		g.Expect(s.Management.Client.List(ctx, configs, client.InNamespace(o.Namespace))).To(Succeed())
		g.Expect(configs.Items).To(BeEmpty())
		for _, m := range ms {
			err := s.Management.Client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: m.Spec.Bootstrap.ConfigRef.Name}, &corev1.Secret{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "bootstrap data Secret %s left", m.Spec.Bootstrap.ConfigRef.Name)
		}
		for _, n := range nodes {
			err := s.Workload.Client.Get(ctx, client.ObjectKey{Name: n}, &corev1.Node{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Node %s left", n)
		}
	}, wait, 200*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		md := &clusterv1.MachineDeployment{}
		g.Expect(s.Management.Client.Get(ctx, windowsMD(o), md)).To(Succeed())
		g.Expect(md.Status.Replicas).To(HaveValue(BeZero()))
	}, wait, 200*time.Millisecond).Should(Succeed())
	noRejections(t)
}
