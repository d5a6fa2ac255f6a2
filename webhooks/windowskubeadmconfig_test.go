package webhooks

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
)

// TestHyperVRefusedButNotOnOlderObjects: a config or template asking for
// Hyper-V isolation is refused, but one admitted with it before keeps
// getting its metadata (finalizers, owner references, labels) updated.
func TestHyperVRefusedButNotOnOlderObjects(t *testing.T) {
	ctx := admission.NewContextWithRequest(context.Background(), admission.Request{})
	c := &bootstrapv1.WindowsKubeadmConfig{}
	c.Name, c.Namespace = "w", "ns"
	c.Spec.Containerd.Isolation = bootstrapv1.HyperVIsolation
	c.Spec.Default()
	w := &WindowsKubeadmConfig{}
	if _, err := w.ValidateCreate(ctx, c); err == nil {
		t.Error("a new config with HyperV was admitted")
	}
	labelled := c.DeepCopy()
	labelled.Labels = map[string]string{"touched": "yes"}
	if _, err := w.ValidateUpdate(ctx, c, labelled); err != nil {
		t.Errorf("an older config with HyperV cannot be updated: %v", err)
	}

	tmpl := &bootstrapv1.WindowsKubeadmConfigTemplate{}
	tmpl.Name, tmpl.Namespace = "w", "ns"
	tmpl.Spec.Template.Spec = c.Spec
	wt := &WindowsKubeadmConfigTemplate{}
	if _, err := wt.ValidateCreate(ctx, tmpl); err == nil {
		t.Error("a new template with HyperV was admitted")
	}
	labelledT := tmpl.DeepCopy()
	labelledT.Labels = map[string]string{"touched": "yes"}
	if _, err := wt.ValidateUpdate(ctx, tmpl, labelledT); err != nil {
		t.Errorf("an older template with HyperV cannot be updated: %v", err)
	}
}
