package reconciler

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	"github.com/capwin/capwin/internal/finalizer"
)

// legacyConfigFinalizer is the finalizer's name before it had a path: a
// config that carries it is moved to ConfigFinalizer, and let go with
// either.
//
//nolint:staticcheck // SA1019: the legacy name is kept for this migration only.
const legacyConfigFinalizer = bootstrapv1.LegacyConfigFinalizer

// ensureFinalizer gives a config ConfigFinalizer, in place of its legacy
// name if it has that.
func ensureFinalizer(ctx context.Context, c client.Client, config *bootstrapv1.WindowsKubeadmConfig) (bool, error) {
	return finalizer.Ensure(ctx, c, config, bootstrapv1.ConfigFinalizer, legacyConfigFinalizer)
}

// removeFinalizer lets a config go, whichever name of the finalizer it
// carries.
func removeFinalizer(config *bootstrapv1.WindowsKubeadmConfig) {
	finalizer.Remove(config, bootstrapv1.ConfigFinalizer, legacyConfigFinalizer)
}
