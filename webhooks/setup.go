package webhooks

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
)

type webhook interface {
	SetupWebhookWithManager(ctrl.Manager) error
}

// SetupInfrastructure registers the infrastructure-capwin webhooks.
func SetupInfrastructure(mgr ctrl.Manager) error {
	return setup(mgr,
		&HybridCluster{}, &HybridClusterTemplate{}, &HybridClusterIdentity{},
		&HybridMachine{}, &HybridMachineTemplate{})
}

// SetupBootstrap registers the bootstrap-capwin webhooks.
func SetupBootstrap(mgr ctrl.Manager) error {
	return setup(mgr, &WindowsKubeadmConfig{}, &WindowsKubeadmConfigTemplate{})
}

func setup(mgr ctrl.Manager, hooks ...webhook) error {
	for _, h := range hooks {
		if err := h.SetupWebhookWithManager(mgr); err != nil {
			return fmt.Errorf("setting up the %T webhook: %w", h, err)
		}
	}
	return nil
}

// kindOf returns the group and kind of a capwin object, for API errors.
func kindOf(obj any) schema.GroupKind {
	switch obj.(type) {
	case *infrav1.HybridCluster:
		return infrav1.GroupVersion.WithKind("HybridCluster").GroupKind()
	case *infrav1.HybridClusterTemplate:
		return infrav1.GroupVersion.WithKind("HybridClusterTemplate").GroupKind()
	case *infrav1.HybridClusterIdentity:
		return infrav1.GroupVersion.WithKind("HybridClusterIdentity").GroupKind()
	case *infrav1.HybridMachine:
		return infrav1.GroupVersion.WithKind("HybridMachine").GroupKind()
	case *infrav1.HybridMachineTemplate:
		return infrav1.GroupVersion.WithKind("HybridMachineTemplate").GroupKind()
	case *bootstrapv1.WindowsKubeadmConfig:
		return bootstrapv1.GroupVersion.WithKind("WindowsKubeadmConfig").GroupKind()
	case *bootstrapv1.WindowsKubeadmConfigTemplate:
		return bootstrapv1.GroupVersion.WithKind("WindowsKubeadmConfigTemplate").GroupKind()
	}
	panic(fmt.Sprintf("kindOf: %T is not a capwin kind", obj))
}
