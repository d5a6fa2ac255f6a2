package webhooks

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
)

// HybridClusterIdentity validates HybridClusterIdentities.
// +kubebuilder:object:generate=false
type HybridClusterIdentity struct{}

// SetupWebhookWithManager registers the webhook with mgr's webhook server.
func (w *HybridClusterIdentity) SetupWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &infrav1.HybridClusterIdentity{}).
		WithValidator(w).
		Complete()
}

var _ admission.Validator[*infrav1.HybridClusterIdentity] = &HybridClusterIdentity{}

// ValidateCreate checks a new identity.
func (w *HybridClusterIdentity) ValidateCreate(_ context.Context, i *infrav1.HybridClusterIdentity) (admission.Warnings, error) {
	return nil, invalid(i, validateIdentity(i))
}

// ValidateUpdate checks a changed identity.
func (w *HybridClusterIdentity) ValidateUpdate(_ context.Context, _, i *infrav1.HybridClusterIdentity) (admission.Warnings, error) {
	return nil, invalid(i, validateIdentity(i))
}

// ValidateDelete allows every deletion.
func (w *HybridClusterIdentity) ValidateDelete(context.Context, *infrav1.HybridClusterIdentity) (admission.Warnings, error) {
	return nil, nil
}

func validateIdentity(i *infrav1.HybridClusterIdentity) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if i.Spec.SecretName == "" {
		errs = append(errs, field.Required(spec.Child("secretName"), "the Secret, in the controller's namespace, that holds the credentials"))
	}
	if a := i.Spec.AllowedNamespaces; a != nil && a.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(a.Selector,
			metav1validation.LabelSelectorValidationOptions{}, spec.Child("allowedNamespaces", "selector"))...)
		if _, err := metav1.LabelSelectorAsSelector(a.Selector); err != nil {
			errs = append(errs, field.Invalid(spec.Child("allowedNamespaces", "selector"), a.Selector, err.Error()))
		}
	}
	return errs
}
