package controllers

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/internal/finalizer"
)

// The finalizers' names before they had a path: objects that carry one are
// moved to the current name, and let go with either.
//
//nolint:staticcheck // SA1019: the legacy names are kept for this migration only.
var (
	legacyMachineFinalizer = infrav1.LegacyMachineFinalizer
	legacyClusterFinalizer = infrav1.LegacyClusterFinalizer
)

// ensureMachineFinalizer gives a HybridMachine MachineFinalizer, in place of
// its legacy name if it has that.
func ensureMachineFinalizer(ctx context.Context, c client.Client, hm *infrav1.HybridMachine) (bool, error) {
	return finalizer.Ensure(ctx, c, hm, infrav1.MachineFinalizer, legacyMachineFinalizer)
}

// removeMachineFinalizer lets a HybridMachine go, whichever name of the
// finalizer it carries.
func removeMachineFinalizer(hm *infrav1.HybridMachine) {
	finalizer.Remove(hm, infrav1.MachineFinalizer, legacyMachineFinalizer)
}

// ensureClusterFinalizer gives a HybridCluster ClusterFinalizer, in place of
// its legacy name if it has that.
func ensureClusterFinalizer(ctx context.Context, c client.Client, hc *infrav1.HybridCluster) (bool, error) {
	return finalizer.Ensure(ctx, c, hc, infrav1.ClusterFinalizer, legacyClusterFinalizer)
}

// removeClusterFinalizer lets a HybridCluster go, whichever name of the
// finalizer it carries.
func removeClusterFinalizer(hc *infrav1.HybridCluster) {
	finalizer.Remove(hc, infrav1.ClusterFinalizer, legacyClusterFinalizer)
}
