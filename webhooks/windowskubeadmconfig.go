package webhooks

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	"github.com/capwin/capwin/bootstrap/validation"
)

// WindowsKubeadmConfig defaults and validates WindowsKubeadmConfigs. It
// reads the owning Cluster to check the network against its CIDRs.
// +kubebuilder:object:generate=false
type WindowsKubeadmConfig struct {
	Client client.Reader
}

// SetupWebhookWithManager registers the webhook with mgr's webhook server.
func (w *WindowsKubeadmConfig) SetupWebhookWithManager(mgr ctrl.Manager) error {
	if w.Client == nil {
		w.Client = mgr.GetAPIReader()
	}
	return ctrl.NewWebhookManagedBy(mgr, &bootstrapv1.WindowsKubeadmConfig{}).
		WithDefaulter(w).
		WithValidator(w).
		Complete()
}

var (
	_ admission.Defaulter[*bootstrapv1.WindowsKubeadmConfig] = &WindowsKubeadmConfig{}
	_ admission.Validator[*bootstrapv1.WindowsKubeadmConfig] = &WindowsKubeadmConfig{}
)

// Default fills in the runtime, network, kube-proxy and reservation defaults.
func (w *WindowsKubeadmConfig) Default(_ context.Context, c *bootstrapv1.WindowsKubeadmConfig) error {
	c.Spec.Default()
	return nil
}

// ValidateCreate checks a new config.
func (w *WindowsKubeadmConfig) ValidateCreate(ctx context.Context, c *bootstrapv1.WindowsKubeadmConfig) (admission.Warnings, error) {
	errs, err := w.validate(ctx, c)
	if err != nil {
		return nil, err
	}
	return nil, invalid(c, errs)
}

// ValidateUpdate checks a changed config. Its spec is immutable: a node
// boots once with the data rendered from it. A refusal the config was
// created before (Hyper-V isolation) does not block its updates.
func (w *WindowsKubeadmConfig) ValidateUpdate(ctx context.Context, oldC, newC *bootstrapv1.WindowsKubeadmConfig) (admission.Warnings, error) {
	errs, err := w.validate(ctx, newC)
	if err != nil {
		return nil, err
	}
	had, err := w.validate(ctx, oldC)
	if err != nil {
		return nil, err
	}
	errs = validation.RatchetUpdate(admittedBefore(errs, had), &oldC.Spec, field.NewPath("spec"))
	errs = append(errs, immutable(oldC.Spec, newC.Spec, field.NewPath("spec"))...)
	return nil, invalid(newC, errs)
}

// ValidateDelete allows every deletion.
func (w *WindowsKubeadmConfig) ValidateDelete(context.Context, *bootstrapv1.WindowsKubeadmConfig) (admission.Warnings, error) {
	return nil, nil
}

func (w *WindowsKubeadmConfig) validate(ctx context.Context, c *bootstrapv1.WindowsKubeadmConfig) (field.ErrorList, error) {
	cluster, err := w.cluster(ctx, c)
	if err != nil {
		return nil, err
	}
	return validation.ValidateConfig(c, cluster), nil
}

// cluster returns the Cluster the config belongs to by its cluster-name
// label, or nil when there is none yet (templates and configs applied before
// their Cluster are checked again by the reconciler).
func (w *WindowsKubeadmConfig) cluster(ctx context.Context, c *bootstrapv1.WindowsKubeadmConfig) (*clusterv1.Cluster, error) {
	name := c.Labels[clusterv1.ClusterNameLabel]
	if name == "" || w.Client == nil {
		return nil, nil
	}
	cluster := &clusterv1.Cluster{}
	if err := w.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, apierrors.NewInternalError(fmt.Errorf("reading Cluster %s/%s: %w", c.Namespace, name, err))
	}
	return cluster, nil
}
