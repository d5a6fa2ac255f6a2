package validation

import (
	"os"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	"github.com/capwin/capwin/node-components/nodeconfig"
)

// The CNIs a WindowsKubeadmConfig may name are the node configuration's,
// each of which has a driver in capwin-node (node-components/cni tests
// that): a CNI the API admits reaches a node that runs it, and one the
// node runs can be chosen.
func TestAPICNIsAreTheNodeConfigurations(t *testing.T) {
	data, err := os.ReadFile("../../config/crd/bootstrap/bases/bootstrap.cluster.x-k8s.io_windowskubeadmconfigs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	schema := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["network"].Properties["cni"]
	var enum []string
	for _, v := range schema.Enum {
		var s string
		if err := yaml.Unmarshal(v.Raw, &s); err != nil {
			t.Fatal(err)
		}
		enum = append(enum, s)
	}
	if !slices.Equal(enum, nodeconfig.CNIs) {
		t.Errorf("spec.network.cni admits %v, the node configuration %v", enum, nodeconfig.CNIs)
	}
	for _, cni := range append(enum, "cilium") {
		spec := bootstrapv1.WindowsKubeadmConfigSpec{}
		spec.Network.CNI = bootstrapv1.CNI(cni)
		errs := validateNetwork(&spec.Network, field.NewPath("spec", "network"))
		known := slices.Contains(enum, cni)
		if known != (len(errs) == 0) || (!known && !strings.Contains(errs.ToAggregate().Error(), "spec.network.cni")) {
			t.Errorf("spec.network.cni %s: %v", cni, errs)
		}
	}
}
