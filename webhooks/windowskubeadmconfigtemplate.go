package webhooks

import (
	"context"

	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	"github.com/capwin/capwin/bootstrap/validation"
)

// WindowsKubeadmConfigTemplate defaults and validates WindowsKubeadmConfigTemplates.
// +kubebuilder:object:generate=false
type WindowsKubeadmConfigTemplate struct{}

// SetupWebhookWithManager registers the webhook with mgr's webhook server.
func (w *WindowsKubeadmConfigTemplate) SetupWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &bootstrapv1.WindowsKubeadmConfigTemplate{}).
		WithDefaulter(w).
		WithValidator(w).
		Complete()
}

var (
	_ admission.Defaulter[*bootstrapv1.WindowsKubeadmConfigTemplate] = &WindowsKubeadmConfigTemplate{}
	_ admission.Validator[*bootstrapv1.WindowsKubeadmConfigTemplate] = &WindowsKubeadmConfigTemplate{}
)

// Default fills in the template's config spec as WindowsKubeadmConfig does.
// In the server-side-apply dry runs of Cluster API's topology controller,
// an l2bridge network has no VXLAN settings: those this webhook defaulted
// for overlay during the topology's earlier apply are not among the fields
// its field manager owns, so its apply of l2bridge leaves them in place,
// and the template would be refused instead of rotated.
func (w *WindowsKubeadmConfigTemplate) Default(ctx context.Context, t *bootstrapv1.WindowsKubeadmConfigTemplate) error {
	if n := &t.Spec.Template.Spec.Network; n.Mode == bootstrapv1.L2Bridge && isTopologyDryRun(ctx, t) {
		n.VXLAN = bootstrapv1.VXLANSpec{}
	}
	t.Spec.Template.Spec.Default()
	return nil
}

// ValidateCreate checks a new template.
func (w *WindowsKubeadmConfigTemplate) ValidateCreate(_ context.Context, t *bootstrapv1.WindowsKubeadmConfigTemplate) (admission.Warnings, error) {
	return nil, invalid(t, validation.ValidateConfigTemplate(t))
}

// ValidateUpdate keeps spec.template.spec immutable, except in the
// server-side-apply dry runs of Cluster API's topology controller. A
// refusal the template was created before (Hyper-V isolation) does not
// block its updates.
func (w *WindowsKubeadmConfigTemplate) ValidateUpdate(ctx context.Context, oldT, newT *bootstrapv1.WindowsKubeadmConfigTemplate) (admission.Warnings, error) {
	errs := admittedBefore(validation.ValidateConfigTemplate(newT), validation.ValidateConfigTemplate(oldT))
	errs = validation.RatchetUpdate(errs, &oldT.Spec.Template.Spec, field.NewPath("spec", "template", "spec"))
	return nil, validateTemplateUpdate(ctx, newT, errs, oldT.Spec.Template.Spec, newT.Spec.Template.Spec)
}

// ValidateDelete allows every deletion.
func (w *WindowsKubeadmConfigTemplate) ValidateDelete(context.Context, *bootstrapv1.WindowsKubeadmConfigTemplate) (admission.Warnings, error) {
	return nil, nil
}
