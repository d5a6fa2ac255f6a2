package webhooks

import (
	"context"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/test/builder"
)

// TestTemplateDefaultsFollowInTopologyDryRuns: what Cluster API's topology
// controller's server-side apply leaves of an earlier default (a Windows
// build, overlay's VXLAN settings) is derived again in its dry runs, so the
// template is rotated rather than refused; anywhere else a build or VXLAN
// settings given are kept, for validation to judge.
func TestTemplateDefaultsFollowInTopologyDryRuns(t *testing.T) {
	dryRun := admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{DryRun: ptr.To(true)}})
	notDryRun := admission.NewContextWithRequest(context.Background(), admission.Request{})
	marked := metav1.ObjectMeta{Namespace: "ns", Name: "t", Annotations: map[string]string{clusterv1.TopologyDryRunAnnotation: ""}}

	hmt := func(meta metav1.ObjectMeta) *infrav1.HybridMachineTemplate {
		t := &infrav1.HybridMachineTemplate{ObjectMeta: meta}
		t.Spec.Template.Spec = builder.WindowsVSphereMachine("ns", "m").Build().Spec
		t.Spec.Template.Spec.OS = infrav1.OSSpec{Type: infrav1.OSWindows, WindowsRelease: infrav1.WindowsServer2025, WindowsBuild: "10.0.20348"}
		return t
	}
	for _, c := range []struct {
		name  string
		ctx   context.Context
		meta  metav1.ObjectMeta
		build string
	}{
		{"topology dry run", dryRun, marked, "10.0.26100"},
		{"dry run without the annotation", dryRun, metav1.ObjectMeta{Namespace: "ns", Name: "t"}, "10.0.20348"},
		{"annotation without a dry run", notDryRun, marked, "10.0.20348"},
	} {
		tmpl := hmt(c.meta)
		if err := (&HybridMachineTemplate{}).Default(c.ctx, tmpl); err != nil {
			t.Fatal(err)
		}
		if got := tmpl.Spec.Template.Spec.OS.WindowsBuild; got != c.build {
			t.Errorf("HybridMachineTemplate, %s: windowsBuild %s, want %s", c.name, got, c.build)
		}
	}

	wkct := func(mode bootstrapv1.NetworkMode) *bootstrapv1.WindowsKubeadmConfigTemplate {
		t := &bootstrapv1.WindowsKubeadmConfigTemplate{ObjectMeta: *marked.DeepCopy()}
		t.Spec.Template.Spec.Network = bootstrapv1.NetworkSpec{Mode: mode, VXLAN: bootstrapv1.VXLANSpec{VNI: bootstrapv1.WindowsVXLANVNI, Port: bootstrapv1.WindowsVXLANPort}}
		return t
	}
	for _, c := range []struct {
		name  string
		ctx   context.Context
		mode  bootstrapv1.NetworkMode
		vxlan bool
	}{
		{"l2bridge in a topology dry run", dryRun, bootstrapv1.L2Bridge, false},
		{"l2bridge elsewhere", notDryRun, bootstrapv1.L2Bridge, true},
		{"overlay in a topology dry run", dryRun, bootstrapv1.Overlay, true},
	} {
		tmpl := wkct(c.mode)
		if err := (&WindowsKubeadmConfigTemplate{}).Default(c.ctx, tmpl); err != nil {
			t.Fatal(err)
		}
		if got := tmpl.Spec.Template.Spec.Network.VXLAN != (bootstrapv1.VXLANSpec{}); got != c.vxlan {
			t.Errorf("WindowsKubeadmConfigTemplate, %s: VXLAN settings kept %v, want %v", c.name, got, c.vxlan)
		}
	}
}
