// Package clusterwatch holds the filter capwin's machine-level reconcilers
// watch Clusters through. A Cluster's status changes whenever one of its
// machines does (Cluster API counts them), and a reconciler that woke
// every machine of a cluster on each such change would reconcile N
// machines N times during a scale-up of N. Only the fields these
// reconcilers wait on pass the filter.
package clusterwatch

import (
	"reflect"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
)

// WhatMachinesWaitOn passes a Cluster's creation, deletion and generic
// events, and an update only when it changes what a HybridMachine or a
// WindowsKubeadmConfig reads from its Cluster: whether it is paused or
// being deleted, whether its infrastructure is provisioned and its control
// plane initialized, its control plane endpoint, its network and its
// infrastructure reference.
func WhatMachinesWaitOn() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*clusterv1.Cluster)
		n, ok2 := e.ObjectNew.(*clusterv1.Cluster)
		if !ok1 || !ok2 {
			return true
		}
		return Changed(o, n)
	}}
}

// Changed is whether n differs from o in what the machines of the cluster
// wait on (see WhatMachinesWaitOn).
func Changed(o, n *clusterv1.Cluster) bool {
	return ptr.Deref(o.Spec.Paused, false) != ptr.Deref(n.Spec.Paused, false) ||
		o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero() ||
		ptr.Deref(o.Status.Initialization.InfrastructureProvisioned, false) != ptr.Deref(n.Status.Initialization.InfrastructureProvisioned, false) ||
		ControlPlaneInitialized(o) != ControlPlaneInitialized(n) ||
		o.Spec.ControlPlaneEndpoint != n.Spec.ControlPlaneEndpoint ||
		o.Spec.InfrastructureRef != n.Spec.InfrastructureRef ||
		!reflect.DeepEqual(o.Spec.ClusterNetwork, n.Spec.ClusterNetwork)
}

// ControlPlaneInitialized is whether the Cluster's control plane is
// initialised. Cluster API reports it as the ControlPlaneInitialized
// condition for every cluster; status.initialization.controlPlaneInitialized
// is only set by a control-plane provider, and a cluster whose control plane
// is stand-alone Machines has none.
func ControlPlaneInitialized(c *clusterv1.Cluster) bool {
	return ptr.Deref(c.Status.Initialization.ControlPlaneInitialized, false) ||
		conditions.IsTrue(c, clusterv1.ClusterControlPlaneInitializedCondition)
}
