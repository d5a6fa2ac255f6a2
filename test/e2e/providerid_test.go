package e2e

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/test/sim"
)

// TestNodesLinkToMachinesThroughTheCloudControllerManager shows where a
// Node's provider ID comes from: every kubelet of the flavor runs with
// --cloud-provider=external and sets none, and the vSphere cloud
// controller manager the flavor installs sets it. With the cloud
// controller manager stopped, the Linux control-plane Machine and then a
// Windows Machine have a registered Node but no nodeRef; started, it finds
// each Node's VM in vCenter and Cluster API links them.
//
// The cloud controller manager acts as its DaemonSet's ServiceAccount:
// with the flavor's ClusterRoleBinding removed it does not start, and
// CloudControllerManagerErr says why.
//
// It runs a simulation of its own, whose cloud controller manager starts
// stopped.
func TestNodesLinkToMachinesThroughTheCloudControllerManager(t *testing.T) {
	t.Parallel() // see run
	g := NewWithT(t)
	ctx := t.Context()
	off, err := sim.Start(ctx, sim.Options{BootDelay: 200 * time.Millisecond, Log: log, WithoutCloudControllerManager: true})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(off.Stop()).To(Succeed()) }()
	o := sim.ClusterOptions{Namespace: "e2e-" + rand.String(5), Name: "w" + rand.String(4), WindowsReplicas: 0}
	_, err = off.CreateCluster(ctx, o)
	g.Expect(err).NotTo(HaveOccurred())
	mc, wc := off.Management.Client, off.Workload.Client

	// Linux: the control plane's kubelet registers its Node, uninitialised.
	cp := &clusterv1.Machine{}
	cpKey := client.ObjectKey{Namespace: o.Namespace, Name: o.Name + "-control-plane-0"}
	uninitialised(t, wc, cpKey.Name, false)
	g.Consistently(func(g Gomega) {
		g.Expect(mc.Get(ctx, cpKey, cp)).To(Succeed())
		g.Expect(cp.Status.NodeRef.IsDefined()).To(BeFalse(), "a nodeRef without a provider ID")
		c := &clusterv1.Cluster{}
		g.Expect(mc.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, c)).To(Succeed())
		g.Expect(conditions.IsTrue(c, clusterv1.ClusterControlPlaneInitializedCondition)).To(BeFalse())
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())

	// The CPI's pod acts as its ServiceAccount: without the flavor's
	// ClusterRoleBinding it may not read its credentials, and does not
	// start.
	binding := &rbacv1.ClusterRoleBinding{}
	g.Eventually(func() error {
		return wc.Get(ctx, client.ObjectKey{Name: "system:cloud-controller-manager"}, binding)
	}, wait, 200*time.Millisecond).Should(Succeed(), "the flavor's ClusterResourceSet applies the CPI's RBAC")
	// Cluster API applies a resource of the set again until every object
	// of it went in (one may fail at first): only once the set's binding
	// says both are applied does a deleted object stay deleted.
	g.Eventually(func(g Gomega) {
		b := &addonsv1.ClusterResourceSetBinding{}
		g.Expect(mc.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, b)).To(Succeed())
		applied := 0
		for _, set := range b.Spec.Bindings {
			for _, r := range set.Resources {
				if set.ClusterResourceSetName == o.Name+"-vsphere-cpi" && ptr.Deref(r.Applied, false) {
					applied++
				}
			}
		}
		g.Expect(applied).To(Equal(2), "the CPI set's credentials Secret and manifests applied")
	}, wait, 200*time.Millisecond).Should(Succeed())
	g.Expect(wc.Delete(ctx, binding)).To(Succeed())
	// The API server's authorizer learns of the deletion through its own
	// informer: start only once it refuses, or the pod could start with
	// the rights it is about to lose.
	g.Eventually(func(g Gomega) {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:kube-system:cloud-controller-manager",
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "kube-system", Verb: "get", Resource: "secrets", Name: "vsphere-cloud-secret"},
		}}
		g.Expect(wc.Create(ctx, review)).To(Succeed())
		g.Expect(review.Status.Allowed).To(BeFalse())
	}, wait, 200*time.Millisecond).Should(Succeed())
	off.StartCloudControllerManager()
	g.Eventually(off.CloudControllerManagerErr, wait, 200*time.Millisecond).Should(MatchError(ContainSubstring("forbidden")))
	restored := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: binding.Name}, RoleRef: binding.RoleRef, Subjects: binding.Subjects}
	g.Expect(wc.Create(ctx, restored)).To(Succeed())
	linked(t, mc, wc, cpKey)

	// Windows: with the cloud controller manager stopped again, a Windows
	// Machine gets its bootstrap data and VM, and its Node stays
	// uninitialised and unlinked.
	off.StopCloudControllerManager()
	md := &clusterv1.MachineDeployment{}
	g.Expect(mc.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name + "-windows"}, md)).To(Succeed())
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Replicas = ptr.To[int32](1)
	g.Expect(mc.Patch(ctx, md, patch)).To(Succeed())
	var win client.ObjectKey
	g.Eventually(func(g Gomega) {
		l := &clusterv1.MachineList{}
		g.Expect(mc.List(ctx, l, client.InNamespace(o.Namespace), client.MatchingLabels{clusterv1.MachineDeploymentNameLabel: o.Name + "-windows"})).To(Succeed())
		g.Expect(l.Items).To(HaveLen(1))
		win = client.ObjectKeyFromObject(&l.Items[0])
		hm := &infrav1.HybridMachine{}
		g.Expect(mc.Get(ctx, win, hm)).To(Succeed())
		g.Expect(hm.Spec.ProviderID).NotTo(BeEmpty())
	}, wait, 200*time.Millisecond).Should(Succeed())
	nodeName := ""
	g.Eventually(func(g Gomega) {
		joined := off.Guests.Joined()
		g.Expect(joined).To(HaveLen(2))
		nodeName = joined[1]
	}, wait, 200*time.Millisecond).Should(Succeed())
	uninitialised(t, wc, nodeName, true)
	g.Consistently(func(g Gomega) {
		m := &clusterv1.Machine{}
		g.Expect(mc.Get(ctx, win, m)).To(Succeed())
		g.Expect(m.Status.NodeRef.IsDefined()).To(BeFalse(), "a nodeRef without a provider ID")
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())

	off.StartCloudControllerManager()
	node := linked(t, mc, wc, win)
	// The kubelet's --node-ip is among the addresses the cloud controller
	// manager found, or it would have refused to initialise the Node.
	g.Expect(node.Status.Addresses).To(ContainElement(corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: node.Annotations[cloudproviderapi.AnnotationAlphaProvidedIPAddr]}))
	g.Expect(off.Guests.Rejected()).To(BeEmpty())
}

// uninitialised waits for the Node and checks it is as a kubelet with
// --cloud-provider=external registers it: the uninitialised taint, no
// provider ID, and, without --node-ip (kubeadm's Linux nodes), its host
// name as its only address; with it (capwin's Windows nodes), the node IP
// too, and the annotation that hands it to the cloud controller manager.
func uninitialised(t *testing.T, wc client.Client, name string, nodeIP bool) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		n := &corev1.Node{}
		g.Expect(wc.Get(t.Context(), client.ObjectKey{Name: name}, n)).To(Succeed())
		g.Expect(n.Spec.ProviderID).To(BeEmpty())
		g.Expect(n.Spec.Taints).To(ContainElement(corev1.Taint{Key: cloudproviderapi.TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule}))
		if !nodeIP {
			g.Expect(n.Status.Addresses).To(Equal([]corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}}))
			g.Expect(n.Annotations).NotTo(HaveKey(cloudproviderapi.AnnotationAlphaProvidedIPAddr))
			return
		}
		g.Expect(n.Annotations).To(HaveKey(cloudproviderapi.AnnotationAlphaProvidedIPAddr))
		g.Expect(n.Status.Addresses).To(ContainElement(HaveField("Type", corev1.NodeInternalIP)))
	}, wait, 200*time.Millisecond).Should(Succeed())
}

// linked waits for the Machine's nodeRef, which Cluster API sets once a
// Node has the Machine's provider ID, and checks the rest of what the
// cloud controller manager does to the Node.
func linked(t *testing.T, mc, wc client.Client, key client.ObjectKey) *corev1.Node {
	t.Helper()
	n := &corev1.Node{}
	NewWithT(t).Eventually(func(g Gomega) {
		m := &clusterv1.Machine{}
		g.Expect(mc.Get(t.Context(), key, m)).To(Succeed())
		g.Expect(m.Status.NodeRef.IsDefined()).To(BeTrue(), "Machine %s has no nodeRef", m.Name)
		g.Expect(wc.Get(t.Context(), client.ObjectKey{Name: m.Status.NodeRef.Name}, n)).To(Succeed())
		g.Expect(n.Spec.Taints).NotTo(ContainElement(HaveField("Key", cloudproviderapi.TaintExternalCloudProvider)))
		g.Expect(n.Labels).To(HaveKey(corev1.LabelInstanceTypeStable))
	}, wait, 200*time.Millisecond).Should(Succeed())
	return n
}
