package webhooks

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"sigs.k8s.io/cluster-api/util/topology"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
)

// HybridMachineTemplate defaults and validates HybridMachineTemplates.
// +kubebuilder:object:generate=false
type HybridMachineTemplate struct{}

// SetupWebhookWithManager registers the webhook with mgr's webhook server.
func (w *HybridMachineTemplate) SetupWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &infrav1.HybridMachineTemplate{}).
		WithDefaulter(w).
		WithValidator(w).
		Complete()
}

var (
	_ admission.Defaulter[*infrav1.HybridMachineTemplate] = &HybridMachineTemplate{}
	_ admission.Validator[*infrav1.HybridMachineTemplate] = &HybridMachineTemplate{}
)

// Default fills in the template's machine spec as HybridMachine does. In
// the server-side-apply dry runs of Cluster API's topology controller, the
// Windows build is derived again from the release: the build this webhook
// defaulted during the topology's earlier apply is not among the fields its
// field manager owns (the API server records an apply's managed fields
// before the webhooks run), so its apply of a new release leaves the old
// build in place, and the template would be refused instead of rotated.
func (w *HybridMachineTemplate) Default(ctx context.Context, t *infrav1.HybridMachineTemplate) error {
	s := &t.Spec.Template.Spec
	if _, known := s.OS.WindowsRelease.Build(); known && isTopologyDryRun(ctx, t) {
		s.OS.WindowsBuild = ""
	}
	defaultMachineSpec(s)
	return nil
}

// isTopologyDryRun is whether the admission request in ctx is a
// server-side-apply dry run of Cluster API's topology controller on obj.
func isTopologyDryRun(ctx context.Context, obj client.Object) bool {
	req, err := admission.RequestFromContext(ctx)
	return err == nil && topology.IsDryRunRequest(req, obj)
}

// ValidateCreate checks a new template.
func (w *HybridMachineTemplate) ValidateCreate(_ context.Context, t *infrav1.HybridMachineTemplate) (admission.Warnings, error) {
	return nil, invalid(t, validateHybridMachineTemplate(t))
}

// ValidateUpdate keeps spec.template.spec immutable, except in the
// server-side-apply dry runs of Cluster API's topology controller.
func (w *HybridMachineTemplate) ValidateUpdate(ctx context.Context, oldT, newT *infrav1.HybridMachineTemplate) (admission.Warnings, error) {
	errs := admittedBefore(validateHybridMachineTemplate(newT), validateHybridMachineTemplate(oldT))
	return nil, validateTemplateUpdate(ctx, newT, errs, oldT.Spec.Template.Spec, newT.Spec.Template.Spec)
}

// ValidateDelete allows every deletion.
func (w *HybridMachineTemplate) ValidateDelete(context.Context, *infrav1.HybridMachineTemplate) (admission.Warnings, error) {
	return nil, nil
}

func validateHybridMachineTemplate(t *infrav1.HybridMachineTemplate) field.ErrorList {
	tmpl := field.NewPath("spec", "template")
	errs := t.Spec.Template.ObjectMeta.Validate(tmpl.Child("metadata"))
	return append(errs, validateMachineSpec(&t.Spec.Template.Spec, tmpl.Child("spec"), true)...)
}

// validateTemplateUpdate is the update check of every template kind: errs
// from validating the new template, and spec.template.spec immutable except
// in the server-side-apply dry runs of Cluster API's topology controller.
func validateTemplateUpdate(ctx context.Context, newT client.Object, errs field.ErrorList, oldSpec, newSpec any) error {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("expected an admission request in the context: %v", err))
	}
	if !topology.IsDryRunRequest(req, newT) {
		if imm := immutable(oldSpec, newSpec, field.NewPath("spec", "template", "spec")); len(imm) > 0 {
			imm[0].Detail = fmt.Sprintf("a %s is immutable: create a new one and point the MachineDeployment, KubeadmControlPlane or ClusterClass at it to roll out the change", kindOf(newT).Kind)
			errs = append(errs, imm...)
		}
	}
	return invalid(newT, errs)
}
