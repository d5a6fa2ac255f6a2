// Package release_test builds the providers' components as `make
// release-manifests` does and applies every object, server-side and dry run,
// to a real API server with Cluster API's, capwin's and cert-manager's CRDs.
package release_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwin/capwin/test/envtest"
	"github.com/capwin/capwin/webhooks"
)

// certManagerVersion is the cert-manager whose CRDs the components' Issuer
// and Certificate are checked against.
const certManagerVersion = "v1.21.2"

var env *envtest.Environment

func TestMain(m *testing.M) {
	dir, err := envtest.ModuleDir(context.Background(), "github.com/cert-manager/cert-manager", certManagerVersion)
	if err != nil {
		println(err.Error())
		os.Exit(1)
	}
	os.Exit(envtest.Run(m, &env, envtest.Options{
		Webhooks: true, ExtraCRDDirectories: []string{filepath.Join(dir, "deploy", "crds")},
		// A workload cluster's authorizers and node admission, as kubeadm
		// configures them, for what the flavors grant nodes.
		APIServerArgs: map[string]string{"authorization-mode": "Node,RBAC", "enable-admission-plugins": "NodeRestriction"},
	},
		func(mgr ctrl.Manager) error {
			return errors.Join(webhooks.SetupInfrastructure(mgr), webhooks.SetupBootstrap(mgr))
		}))
}

func TestComponentsApply(t *testing.T) {
	for provider, want := range map[string]map[string]int{
		"infrastructure": {"CustomResourceDefinition": 5, "Deployment": 1, "MutatingWebhookConfiguration": 1, "ValidatingWebhookConfiguration": 1, "Certificate": 1},
		"bootstrap":      {"CustomResourceDefinition": 2, "Deployment": 1, "MutatingWebhookConfiguration": 1, "ValidatingWebhookConfiguration": 1, "Certificate": 1},
	} {
		t.Run(provider, func(t *testing.T) {
			g := NewWithT(t)
			ctx := t.Context()
			objs := build(t, provider)
			kinds := map[string]int{}
			// Namespaces first, for real: the rest is applied into them.
			for _, o := range objs {
				kinds[o.GetKind()]++
				if o.GetKind() == "Namespace" {
					ns := &corev1.Namespace{}
					ns.Name = o.GetName()
					g.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, ns))).To(Succeed())
				}
			}
			for _, o := range objs {
				if o.GetKind() == "Namespace" {
					continue
				}
				// A label every object of a provider's components carries.
				g.Expect(o.GetLabels()).To(HaveKeyWithValue("cluster.x-k8s.io/provider", provider+"-capwin"), "%s %s", o.GetKind(), o.GetName())
				err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.DryRunAll, client.ForceOwnership, client.FieldOwner("release-test"))
				g.Expect(err).NotTo(HaveOccurred(), "%s %s", o.GetKind(), o.GetName())
			}
			for kind, n := range want {
				g.Expect(kinds[kind]).To(Equal(n), "%s objects", kind)
			}
		})
	}
}

// build runs kustomize on config/<provider> as make release-manifests does.
func build(t *testing.T, provider string) []*unstructured.Unstructured {
	t.Helper()
	return decode(t, kustomize(t, provider))
}

func kustomize(t *testing.T, provider string) []byte {
	t.Helper()
	root := envtest.RepoRoot()
	cmd := exec.CommandContext(t.Context(), "go", "tool", "-modfile="+filepath.Join(root, "hack", "tools", "go.mod"),
		"kustomize", "build", filepath.Join(root, "config", provider))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kustomize build config/%s: %v\n%s", provider, err, stderr.String())
	}
	return out
}

func decode(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	objs, err := envtest.DecodeObjects(data)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}
