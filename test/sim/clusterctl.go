package sim

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	clusterctlconfig "sigs.k8s.io/cluster-api/cmd/clusterctl/config"
	utilyaml "sigs.k8s.io/cluster-api/util/yaml"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
)

// LabelAsClusterctl makes the management cluster look, to clusterctl's
// object graph (what `clusterctl move` moves, and what Cluster API's
// resilience validators in its test framework walk), as `clusterctl init`
// leaves one: every provider's CRDs labelled clusterctl.cluster.x-k8s.io
// and cluster.x-k8s.io/provider with the provider's name (envtest
// installs them from config/crd/bases, unlabelled), and clusterctl's
// inventory CRD installed. The graph lists the objects of labelled CRDs
// only, and it reads the inventory for the infrastructure providers'
// namespaces, whose Secrets it adds; the simulation runs the controllers
// in process, so the inventory holds no provider and adds none.
func (s *Sim) LabelAsClusterctl(ctx context.Context) error {
	c := s.Management.Client
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := c.List(ctx, crds); err != nil {
		return fmt.Errorf("listing CRDs: %w", err)
	}
	for i := range crds.Items {
		crd := &crds.Items[i]
		provider := s.clusterctlProvider(crd)
		if _, labelled := crd.Labels[clusterctlv1.ClusterctlLabel]; provider == "" || labelled && crd.Labels[clusterv1.ProviderNameLabel] == provider {
			continue
		}
		patch := client.MergeFrom(crd.DeepCopy())
		if crd.Labels == nil {
			crd.Labels = map[string]string{}
		}
		crd.Labels[clusterctlv1.ClusterctlLabel] = ""
		crd.Labels[clusterv1.ProviderNameLabel] = provider
		if err := c.Patch(ctx, crd, patch); err != nil {
			return fmt.Errorf("labelling CRD %s as clusterctl does: %w", crd.Name, err)
		}
	}
	objs, err := utilyaml.ToUnstructured(clusterctlconfig.ClusterctlAPIManifest)
	if err != nil {
		return fmt.Errorf("reading clusterctl's inventory CRD: %w", err)
	}
	for i := range objs {
		if err := client.IgnoreAlreadyExists(c.Create(ctx, &objs[i])); err != nil {
			return fmt.Errorf("installing clusterctl's inventory CRD: %w", err)
		}
	}
	// The inventory's kind is served once its CRD is established.
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(clusterctlv1.GroupVersion.WithKind("ProviderList"))
		return c.List(ctx, l) == nil, nil
	})
}

// clusterctlProvider is the name clusterctl gives the provider that
// installs crd, or "" for a CRD of none.
func (s *Sim) clusterctlProvider(crd *apiextensionsv1.CustomResourceDefinition) string {
	switch g := crd.Spec.Group; g {
	case infrav1.GroupVersion.Group:
		return "infrastructure-capwin"
	case bootstrapv1.GroupVersion.Group:
		// capwin's and the kubeadm bootstrap provider's kinds share it.
		if s.Management.Scheme.Recognizes(bootstrapv1.GroupVersion.WithKind(crd.Spec.Names.Kind)) {
			return "bootstrap-capwin"
		}
		return "bootstrap-kubeadm"
	case "controlplane.cluster.x-k8s.io":
		return "control-plane-kubeadm"
	case clusterv1.GroupVersion.Group, "addons.cluster.x-k8s.io", "runtime.cluster.x-k8s.io", "ipam.cluster.x-k8s.io":
		return "cluster-api"
	}
	return ""
}
