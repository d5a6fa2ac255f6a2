package envtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	kruntime "k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/capwin/capwin/internal/scheme"
	"github.com/capwin/capwin/test/envtest/apiserver"
)

// Environment is a running kube-apiserver and etcd with the CRDs installed
// (apiserver.Environment).
type Environment = apiserver.Environment

// Options chooses what an Environment holds besides the API server
// (apiserver.Options).
type Options = apiserver.Options

// NewScheme returns capwin's scheme (internal/scheme).
func NewScheme() *kruntime.Scheme { return scheme.New() }

// Start starts kube-apiserver and etcd as apiserver.Start does, with
// capwin's scheme unless opts names another.
func Start(ctx context.Context, opts Options) (*Environment, error) {
	if opts.Scheme == nil {
		opts.Scheme = NewScheme()
	}
	return apiserver.Start(ctx, opts)
}

// RepoRoot is the root of the capwin source tree.
func RepoRoot() string { return apiserver.RepoRoot() }

// Kubectl is the path of the kubectl built with the envtest control plane
// (hack/envtest-assets.sh), of the API server's Kubernetes version.
func Kubectl(ctx context.Context) (string, error) {
	dir, err := apiserver.AssetsDir(ctx)
	if err != nil {
		return "", err
	}
	kubectl := filepath.Join(dir, "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		return "", fmt.Errorf("no kubectl in %s (KUBEBUILDER_ASSETS names another directory than hack/envtest-assets.sh builds?): %w", dir, err)
	}
	return kubectl, nil
}

// ModuleDir returns the module cache directory of module at version
// (apiserver.ModuleDir).
func ModuleDir(ctx context.Context, module, version string) (string, error) {
	return apiserver.ModuleDir(ctx, module, version)
}

// RunManager starts mgr in the background (apiserver.RunManager).
func RunManager(ctx context.Context, mgr ctrl.Manager) (context.Context, func() error) {
	return apiserver.RunManager(ctx, mgr)
}
