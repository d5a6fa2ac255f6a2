package controllers_test

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/capwin/capwin/controllers"
	"github.com/capwin/capwin/test/builder"
)

// TestHybridClusterWakesItsMachines: a HybridCluster's change reaches the
// machines of its owner Cluster, and only them, since machines wait on
// their HybridCluster and no longer on every Cluster update.
func TestHybridClusterWakesItsMachines(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	for name, cluster := range map[string]string{"a1": "win1", "a2": "win1", "b1": "win2"} {
		hm := builder.WindowsVSphereMachine(ns, name).Build()
		hm.Labels = map[string]string{clusterv1.ClusterNameLabel: cluster}
		g.Expect(env.Client.Create(t.Context(), hm)).To(Succeed())
	}
	r := &controllers.HybridMachineReconciler{Client: env.Client}
	hc := builder.VSphereCluster(ns, "win1").Build()
	hc.OwnerReferences = []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: "win1", UID: "u"}}
	var names []string
	for _, req := range r.HybridClusterToHybridMachines(t.Context(), hc) {
		g.Expect(req.Namespace).To(Equal(ns))
		names = append(names, req.Name)
	}
	g.Expect(names).To(ConsistOf("a1", "a2"))

	hc.OwnerReferences = nil
	g.Expect(r.HybridClusterToHybridMachines(t.Context(), hc)).To(BeEmpty(), "a HybridCluster no Cluster owns yet wakes no one")
	hc.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Cluster", Name: "win1"}}
	g.Expect(r.HybridClusterToHybridMachines(t.Context(), hc)).To(Equal([]reconcile.Request(nil)), "another group's Cluster is not Cluster API's")
}
