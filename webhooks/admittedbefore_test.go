package webhooks

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/test/builder"
)

// TestObjectsAdmittedBeforeARuleStillUpdate: a rule added after an object
// was admitted refuses new objects, but not the updates of that object that
// leave what the rule looks at as it was (its finalizer removed on delete,
// owner references, labels); an update that breaks a rule the old object
// kept is still refused.
func TestObjectsAdmittedBeforeARuleStillUpdate(t *testing.T) {
	ctx := admission.NewContextWithRequest(context.Background(), admission.Request{})
	touched := func(o interface{ SetFinalizers([]string) }) { o.SetFinalizers([]string{"example.com/touched"}) }

	// A Windows VM with less memory than today's least.
	small := builder.WindowsVSphereMachine("ns", "small").Build()
	small.Spec.VSphere.MemoryMiB = 3072
	w := &HybridMachine{}
	if _, err := w.ValidateCreate(ctx, small); err == nil {
		t.Fatal("a new Windows machine with 3072 MiB was admitted")
	}
	updated := small.DeepCopy()
	touched(updated)
	if _, err := w.ValidateUpdate(ctx, small, updated); err != nil {
		t.Errorf("a machine admitted with 3072 MiB before cannot lose its finalizer: %v", err)
	}
	// What an update newly breaks is kept.
	oneCPU := small.DeepCopy()
	oneCPU.Spec.VSphere.NumCPUs = 1
	if errs := admittedBefore(validateHybridMachine(oneCPU), validateHybridMachine(small)); len(errs) != 1 || errs[0].Field != "spec.vsphere.numCPUs" {
		t.Errorf("an error the old object did not have was dropped: %v", errs)
	}

	tmpl := &infrav1.HybridMachineTemplate{}
	tmpl.Name, tmpl.Namespace = "small", "ns"
	tmpl.Spec.Template.Spec = small.Spec
	wt := &HybridMachineTemplate{}
	if _, err := wt.ValidateCreate(ctx, tmpl); err == nil {
		t.Fatal("a new template of a Windows machine with 3072 MiB was admitted")
	}
	updatedT := tmpl.DeepCopy()
	touched(updatedT)
	if _, err := wt.ValidateUpdate(ctx, tmpl, updatedT); err != nil {
		t.Errorf("a template admitted with 3072 MiB before cannot get an owner's update: %v", err)
	}

	// A node label the kubelet may not set.
	c := &bootstrapv1.WindowsKubeadmConfig{}
	c.Name, c.Namespace = "w", "ns"
	c.Spec.Default()
	c.Spec.NodeRegistration.Labels = map[string]string{"node-role.kubernetes.io/worker": ""}
	wc := &WindowsKubeadmConfig{}
	if _, err := wc.ValidateCreate(ctx, c); err == nil {
		t.Fatal("a new config with a node-role label was admitted")
	}
	updatedC := c.DeepCopy()
	touched(updatedC)
	if _, err := wc.ValidateUpdate(ctx, c, updatedC); err != nil {
		t.Errorf("a config admitted with a node-role label before cannot lose its finalizer: %v", err)
	}
	ct := &bootstrapv1.WindowsKubeadmConfigTemplate{}
	ct.Name, ct.Namespace = "w", "ns"
	ct.Spec.Template.Spec = c.Spec
	wct := &WindowsKubeadmConfigTemplate{}
	if _, err := wct.ValidateCreate(ctx, ct); err == nil {
		t.Fatal("a new template with a node-role label was admitted")
	}
	updatedCT := ct.DeepCopy()
	touched(updatedCT)
	if _, err := wct.ValidateUpdate(ctx, ct, updatedCT); err != nil {
		t.Errorf("a template admitted with a node-role label before cannot get an owner's update: %v", err)
	}
}
