package webhooks

import (
	"context"

	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
)

// HybridClusterTemplate validates HybridClusterTemplates.
// +kubebuilder:object:generate=false
type HybridClusterTemplate struct{}

// SetupWebhookWithManager registers the webhook with mgr's webhook server.
func (w *HybridClusterTemplate) SetupWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &infrav1.HybridClusterTemplate{}).
		WithValidator(w).
		Complete()
}

var _ admission.Validator[*infrav1.HybridClusterTemplate] = &HybridClusterTemplate{}

// ValidateCreate checks a new template.
func (w *HybridClusterTemplate) ValidateCreate(_ context.Context, t *infrav1.HybridClusterTemplate) (admission.Warnings, error) {
	return nil, invalid(t, validateHybridClusterTemplate(t))
}

// ValidateUpdate keeps spec.template.spec immutable, except in the
// server-side-apply dry runs of Cluster API's topology controller.
func (w *HybridClusterTemplate) ValidateUpdate(ctx context.Context, oldT, newT *infrav1.HybridClusterTemplate) (admission.Warnings, error) {
	return nil, validateTemplateUpdate(ctx, newT, validateHybridClusterTemplate(newT), oldT.Spec.Template.Spec, newT.Spec.Template.Spec)
}

// ValidateDelete allows every deletion.
func (w *HybridClusterTemplate) ValidateDelete(context.Context, *infrav1.HybridClusterTemplate) (admission.Warnings, error) {
	return nil, nil
}

func validateHybridClusterTemplate(t *infrav1.HybridClusterTemplate) field.ErrorList {
	tmpl := field.NewPath("spec", "template")
	errs := t.Spec.Template.ObjectMeta.Validate(tmpl.Child("metadata"))
	return append(errs, validateClusterSpec(&t.Spec.Template.Spec, tmpl.Child("spec"))...)
}
