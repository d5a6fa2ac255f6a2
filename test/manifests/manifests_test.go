// Package manifests_test checks the hand-written manifests in config/
// against the generated CRDs.
package manifests_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/capwin/capwin/test/envtest"
)

// TestCAPIAggregatedRoleCoversEveryKind: Cluster API core must be able to
// manage every namespaced kind it references (all but identities, which
// only capwin reads).
func TestCAPIAggregatedRoleCoversEveryKind(t *testing.T) {
	root := envtest.RepoRoot()
	for _, provider := range []string{"infrastructure", "bootstrap"} {
		role := &rbacv1.ClusterRole{}
		readYAML(t, filepath.Join(root, "config", "rbac", provider, "aggregated_role.yaml"), role)
		if role.Labels["cluster.x-k8s.io/aggregate-to-manager"] != "true" {
			t.Fatalf("the %s role lacks the cluster.x-k8s.io/aggregate-to-manager label Cluster API aggregates on", provider)
		}
		crds, err := filepath.Glob(filepath.Join(root, "config", "crd", provider, "bases", "*.yaml"))
		if err != nil || len(crds) == 0 {
			t.Fatalf("no %s CRDs found: %v", provider, err)
		}
		checkCRDs(t, role, crds)
	}
}

func checkCRDs(t *testing.T, role *rbacv1.ClusterRole, crds []string) {
	t.Helper()
	for _, f := range crds {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		readYAML(t, f, crd)
		if crd.Spec.Scope == apiextensionsv1.ClusterScoped {
			continue
		}
		if got := crd.Labels["cluster.x-k8s.io/v1beta2"]; got != "v1alpha1" {
			t.Errorf("CRD %s: label cluster.x-k8s.io/v1beta2 = %q, want v1alpha1 (the contract version Cluster API looks up)", crd.Name, got)
		}
		if !allows(role, crd.Spec.Group, crd.Spec.Names.Plural, "get", "list", "watch", "patch", "update", "delete") {
			t.Errorf("the aggregated role does not let Cluster API manage %s.%s", crd.Spec.Names.Plural, crd.Spec.Group)
		}
	}
}

func allows(role *rbacv1.ClusterRole, group, resource string, verbs ...string) bool {
	for _, r := range role.Rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) {
			for _, v := range verbs {
				if !slices.Contains(r.Verbs, v) {
					return false
				}
			}
			return true
		}
	}
	return false
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(strings.TrimPrefix(string(data), "---\n")), into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestWebhooksSplitByProvider: each provider's webhook configuration names
// only its own API group, so installing one provider never routes the other's
// objects to a server that does not serve them.
func TestWebhooksSplitByProvider(t *testing.T) {
	root := envtest.RepoRoot()
	for provider, group := range map[string]string{"infrastructure": "infrastructure.cluster.x-k8s.io", "bootstrap": "bootstrap.cluster.x-k8s.io"} {
		data, err := os.ReadFile(filepath.Join(root, "config", "webhook", provider, "manifests.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, doc := range strings.Split(string(data), "\n---\n") {
			var cfg struct {
				Kind     string `json:"kind"`
				Webhooks []struct {
					Name  string `json:"name"`
					Rules []struct {
						APIGroups []string `json:"apiGroups"`
					} `json:"rules"`
				} `json:"webhooks"`
			}
			if err := yaml.Unmarshal([]byte(doc), &cfg); err != nil {
				t.Fatalf("%s: %v", provider, err)
			}
			for _, w := range cfg.Webhooks {
				n++
				for _, r := range w.Rules {
					if !slices.Equal(r.APIGroups, []string{group}) {
						t.Errorf("%s webhook %s matches groups %v, want only %s", provider, w.Name, r.APIGroups, group)
					}
				}
			}
		}
		if n == 0 {
			t.Errorf("%s has no webhooks", provider)
		}
	}
}
