package controllers

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// HybridClusterToHybridMachines lets the external tests call the mapping
// against the test API server.
func (r *HybridMachineReconciler) HybridClusterToHybridMachines(ctx context.Context, o client.Object) []reconcile.Request {
	return r.hybridClusterToHybridMachines(ctx, o)
}
