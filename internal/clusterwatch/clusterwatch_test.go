package clusterwatch

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

func TestWhatMachinesWaitOn(t *testing.T) {
	base := func() *clusterv1.Cluster {
		return &clusterv1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"},
			Spec: clusterv1.ClusterSpec{
				ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: "10.0.0.1", Port: 6443},
				ClusterNetwork:       clusterv1.ClusterNetwork{Pods: clusterv1.NetworkRanges{CIDRBlocks: []string{"10.244.0.0/16"}}},
				InfrastructureRef:    clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "HybridCluster", Name: "c"},
			},
		}
	}
	for _, tt := range []struct {
		name   string
		change func(*clusterv1.Cluster)
		passes bool
	}{
		{"nothing", func(*clusterv1.Cluster) {}, false},
		{"a worker count", func(c *clusterv1.Cluster) {
			c.Status.Workers = &clusterv1.WorkersStatus{Replicas: ptr.To[int32](7)}
		}, false},
		{"another condition", func(c *clusterv1.Cluster) {
			c.Status.Conditions = []metav1.Condition{{Type: clusterv1.ClusterWorkerMachinesReadyCondition, Status: metav1.ConditionFalse, Reason: "x"}}
		}, false},
		{"the resource version", func(c *clusterv1.Cluster) { c.ResourceVersion = "2" }, false},
		{"paused", func(c *clusterv1.Cluster) { c.Spec.Paused = ptr.To(true) }, true},
		{"deleted", func(c *clusterv1.Cluster) { c.DeletionTimestamp = ptr.To(metav1.Now()) }, true},
		{"infrastructure provisioned", func(c *clusterv1.Cluster) {
			c.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
		}, true},
		{"control plane initialised, by its field", func(c *clusterv1.Cluster) {
			c.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
		}, true},
		{"control plane initialised, by its condition", func(c *clusterv1.Cluster) {
			c.Status.Conditions = []metav1.Condition{{Type: clusterv1.ClusterControlPlaneInitializedCondition, Status: metav1.ConditionTrue, Reason: "x"}}
		}, true},
		{"the endpoint", func(c *clusterv1.Cluster) { c.Spec.ControlPlaneEndpoint.Host = "10.0.0.2" }, true},
		{"the pod network", func(c *clusterv1.Cluster) { c.Spec.ClusterNetwork.Pods.CIDRBlocks = []string{"10.245.0.0/16"} }, true},
		{"the service domain", func(c *clusterv1.Cluster) { c.Spec.ClusterNetwork.ServiceDomain = "example.local" }, true},
		{"the infrastructure", func(c *clusterv1.Cluster) { c.Spec.InfrastructureRef.Name = "d" }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o, n := base(), base()
			tt.change(n)
			p := WhatMachinesWaitOn()
			if got := p.Update(event.UpdateEvent{ObjectOld: o, ObjectNew: n}); got != tt.passes {
				t.Errorf("an update of %s passes: %v, want %v", tt.name, got, tt.passes)
			}
			if got := p.Update(event.UpdateEvent{ObjectOld: n, ObjectNew: o}); got != tt.passes {
				t.Errorf("the reverse update of %s passes: %v, want %v", tt.name, got, tt.passes)
			}
		})
	}
	p := WhatMachinesWaitOn()
	if !p.Create(event.CreateEvent{Object: base()}) || !p.Delete(event.DeleteEvent{Object: base()}) || !p.Generic(event.GenericEvent{Object: base()}) {
		t.Error("a Cluster's creation, deletion and generic events must pass")
	}
}
