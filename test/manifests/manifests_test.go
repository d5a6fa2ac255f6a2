// Package manifests_test checks the hand-written manifests in config/
// against the generated CRDs.
package manifests_test

import (
	"os"
	"os/exec"
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

// TestTiltFiles: tilt-provider.yaml and tilt-settings.json parse, and every
// path they name exists.
func TestTiltFiles(t *testing.T) {
	root := envtest.RepoRoot()
	var providers []struct {
		Name   string `json:"name"`
		Config struct {
			Image           string   `json:"image"`
			Label           string   `json:"label"`
			GoMain          string   `json:"go_main"`
			KustomizeFolder string   `json:"kustomize_folder"`
			LiveReloadDeps  []string `json:"live_reload_deps"`
		} `json:"config"`
	}
	readYAML(t, filepath.Join(root, "tilt-provider.yaml"), &providers)
	if len(providers) != 2 {
		t.Fatalf("tilt-provider.yaml describes %d providers, want infrastructure and bootstrap", len(providers))
	}
	manager, err := os.ReadFile(filepath.Join(root, "config", "manager", "manager.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	exists := func(what, path string) {
		if _, err := os.Stat(filepath.Join(root, path)); err != nil {
			t.Errorf("%s %s: %v", what, path, err)
		}
	}
	var names []string
	for _, p := range providers {
		names = append(names, p.Name)
		c := p.Config
		if c.Label == "" || c.Image == "" {
			t.Errorf("provider %s needs a label and an image", p.Name)
		}
		if !strings.Contains(string(manager), "image: "+c.Image) {
			t.Errorf("provider %s builds image %s, which config/manager/manager.yaml does not use", p.Name, c.Image)
		}
		exists("go_main", c.GoMain)
		exists("kustomize_folder", filepath.Join(c.KustomizeFolder, "kustomization.yaml"))
		for _, d := range c.LiveReloadDeps {
			exists("live_reload_deps entry", d)
		}
		for _, dir := range sourceDirs(t, root, c.GoMain) {
			if !slices.Contains(c.LiveReloadDeps, dir) {
				t.Errorf("provider %s: %s builds from %s, which live_reload_deps does not list: Tilt would not rebuild on a change there", p.Name, c.GoMain, dir)
			}
		}
	}
	var settings struct {
		ProviderRepos   []string            `json:"provider_repos"`
		EnableProviders []string            `json:"enable_providers"`
		ExtraArgs       map[string][]string `json:"extra_args"`
	}
	readYAML(t, filepath.Join(root, "tilt-settings.json"), &settings)
	for _, n := range names {
		if !slices.Contains(settings.EnableProviders, n) {
			t.Errorf("tilt-settings.json does not enable %s", n)
		}
	}
	if len(settings.ProviderRepos) == 0 {
		t.Error("tilt-settings.json names no provider repository")
	}
}

// sourceDirs are the repository's top-level directories (and go.mod,
// go.sum) that the Go program main is built from: those of every package
// of the repository, in any of its modules, that it imports.
func sourceDirs(t *testing.T, root, main string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.Dir}}{{end}}", "./"+filepath.Dir(main))
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", main, err)
	}
	dirs := []string{"go.mod", "go.sum"}
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue // a module from the module cache
		}
		top := strings.Split(filepath.ToSlash(rel), "/")[0]
		if !slices.Contains(dirs, top) {
			dirs = append(dirs, top)
		}
	}
	if len(dirs) < 5 {
		t.Fatalf("go list found only %v for %s", dirs, main)
	}
	return dirs
}
