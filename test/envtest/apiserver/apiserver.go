package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"
)

// Options chooses what an Environment holds besides the API server.
type Options struct {
	// Scheme holds the types the environment's client and managers know;
	// Kubernetes' built-in types only when nil.
	Scheme *kruntime.Scheme

	// Webhooks installs capwin's webhook configurations (config/webhook)
	// pointing at the environment's local webhook server; a manager from
	// NewManager serves them.
	Webhooks bool

	// CAPIWebhooks also installs Cluster API core's webhook configurations
	// (defaulting and validation of Clusters, Machines, MachineSets,
	// MachineDeployments...), pointing at the same local webhook server;
	// SetupCoreWebhooks registers their handlers. It implies Webhooks.
	CAPIWebhooks bool

	// WithoutCRDs starts a bare API server, as a workload cluster has.
	WithoutCRDs bool

	// StopTimeout is how long Stop waits for kube-apiserver and etcd to
	// stop before killing them; a minute when zero.
	StopTimeout time.Duration

	// ExtraCRDDirectories are installed too (cert-manager's, say).
	ExtraCRDDirectories []string

	// APIServerArgs are extra kube-apiserver flags, named without their
	// dashes ("enable-bootstrap-token-auth": "true"). Each replaces
	// envtest's value of the same flag ("authorization-mode": "Node,RBAC").
	APIServerArgs map[string]string

	// CA, when set, is the cluster's CA: it issues the API server's
	// serving certificate (for localhost, 127.0.0.1 and ServingIPs) and
	// the client certificates it trusts, the environment's own users'
	// included. envtest makes two CAs of its own otherwise, and keeps their
	// keys.
	CA *CA
	// ServingIPs are more addresses the serving certificate is valid for
	// (a control-plane VIP that routes to this API server); only with CA.
	ServingIPs []string
}

// Environment is a running kube-apiserver and etcd with the CRDs installed.
type Environment struct {
	Config *rest.Config
	Client client.Client
	Scheme *kruntime.Scheme

	env *envtest.Environment
	// webhooks is whether capwin's webhook configurations are installed.
	webhooks bool
	// certDir is the API server's certificate directory when it is ours
	// (Options.CA).
	certDir string
}

// Start starts kube-apiserver and etcd (built by hack/envtest-assets.sh) and
// installs capwin's CRDs and those of Cluster API core, kubeadm bootstrap and
// kubeadm control plane, read from the Cluster API module.
func Start(ctx context.Context, opts Options) (*Environment, error) {
	assets, err := AssetsDir(ctx)
	if err != nil {
		return nil, err
	}
	scheme := opts.Scheme
	if scheme == nil {
		scheme = kruntime.NewScheme()
		utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
	}
	if !opts.WithoutCRDs {
		dirs, err := CRDDirectories(ctx)
		if err != nil {
			return nil, err
		}
		dirs = append(dirs, opts.ExtraCRDDirectories...)
		env.CRDDirectoryPaths = dirs
	}
	if opts.Webhooks || opts.CAPIWebhooks {
		w, err := webhookConfigurations(ctx, opts.CAPIWebhooks)
		if err != nil {
			return nil, err
		}
		env.WebhookInstallOptions = w
	}
	// kube-apiserver and etcd die with this process, however it ends. The
	// paths are set, not the assets directory: envtest prefers
	// KUBEBUILDER_ASSETS, which make test sets, to BinaryAssetsDirectory.
	tiedDir, err := tiedAssets(assets)
	if err != nil {
		return nil, err
	}
	env.ControlPlane.GetAPIServer().Path = filepath.Join(tiedDir, "kube-apiserver")
	env.ControlPlane.Etcd = &envtest.Etcd{Path: filepath.Join(tiedDir, "etcd")}
	var certDir string
	if opts.CA != nil {
		// envtest keeps what it finds in its certificate directory.
		if certDir, err = os.MkdirTemp("", "capwin-apiserver-"); err != nil {
			return nil, err
		}
		if err := opts.CA.serving(certDir, opts.ServingIPs); err != nil {
			_ = os.RemoveAll(certDir)
			return nil, err
		}
		api := env.ControlPlane.GetAPIServer()
		api.CertDir = certDir
		api.CA = opts.CA.CertPEM()
		api.Authn = &caAuthn{ca: opts.CA}
	} else if len(opts.ServingIPs) > 0 {
		return nil, errors.New("apiserver.Options.ServingIPs needs a CA")
	}
	apiServerArgs := env.ControlPlane.GetAPIServer().Configure()
	for flag, value := range opts.APIServerArgs {
		apiServerArgs.Set(flag, value)
	}
	// kube-apiserver takes longer than envtest's default 20 s to come up on a
	// loaded 2-core machine.
	env.ControlPlaneStartTimeout = 2 * time.Minute
	env.ControlPlaneStopTimeout = time.Minute
	if opts.StopTimeout > 0 {
		env.ControlPlaneStopTimeout = opts.StopTimeout
	}

	removeCertDir := func() {
		if certDir != "" {
			_ = os.RemoveAll(certDir)
		}
	}
	cfg, err := env.Start()
	if err != nil {
		removeCertDir()
		return nil, fmt.Errorf("starting envtest with assets from %s: %w", assets, err)
	}
	// The default rate limit throttles tests that create many objects.
	cfg.QPS, cfg.Burst = 200, 400
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		removeCertDir()
		return nil, fmt.Errorf("creating a client for envtest: %w", err)
	}
	if !opts.WithoutCRDs {
		if err := labelContracts(ctx, c); err != nil {
			_ = env.Stop()
			removeCertDir()
			return nil, err
		}
	}
	return &Environment{Config: cfg, Client: c, Scheme: scheme, env: env, webhooks: opts.Webhooks || opts.CAPIWebhooks, certDir: certDir}, nil
}

// labelContracts labels the CRDs of Cluster API's kubeadm providers with
// the contract they implement, as their release manifests are labelled
// (their config/crd/bases, which envtest installs, are not): Cluster API
// finds a referenced template's API version through that label.
func labelContracts(ctx context.Context, c client.Client) error {
	crds := &unstructured.UnstructuredList{}
	crds.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinitionList"})
	if err := c.List(ctx, crds); err != nil {
		return fmt.Errorf("listing CRDs: %w", err)
	}
	for i := range crds.Items {
		crd := &crds.Items[i]
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		if group != "bootstrap.cluster.x-k8s.io" && group != "controlplane.cluster.x-k8s.io" {
			continue
		}
		labels := crd.GetLabels()
		if _, ok := labels["cluster.x-k8s.io/v1beta2"]; ok {
			continue
		}
		if labels == nil {
			labels = map[string]string{}
		}
		labels["cluster.x-k8s.io/v1beta2"] = "v1beta2"
		crd.SetLabels(labels)
		if err := c.Update(ctx, crd); err != nil {
			return fmt.Errorf("labelling CRD %s with its contract: %w", crd.GetName(), err)
		}
	}
	return nil
}

// AddUser returns a client configuration that authenticates as user name in
// groups, with a client certificate signed by the API server's client CA
// (CertData and KeyData hold the PEM of the certificate and its key).
func (e *Environment) AddUser(name string, groups ...string) (*rest.Config, error) {
	u, err := e.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return nil, fmt.Errorf("adding user %s to envtest: %w", name, err)
	}
	return rest.CopyConfig(u.Config()), nil
}

// Stop stops the API server and etcd and removes their data.
func (e *Environment) Stop() error {
	err := e.env.Stop()
	if e.certDir != "" {
		_ = os.RemoveAll(e.certDir)
	}
	return err
}

// controllerConfig lets several managers in one test binary register
// controllers of the same name, as each test's own manager does.
func controllerConfig() config.Controller {
	return config.Controller{SkipNameValidation: ptr.To(true)}
}

// NewManager returns a controller-runtime manager for the environment. When
// the environment was started with Options.Webhooks its webhook server
// listens where the installed webhook configurations point. mutate, if
// given, adjusts the options (a logger, say) before the manager is made.
func (e *Environment) NewManager(mutate ...func(*manager.Options)) (ctrl.Manager, error) {
	opts := manager.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             controllerConfig(),
	}
	if w := e.env.WebhookInstallOptions; e.webhooks {
		opts.WebhookServer = webhook.NewServer(webhook.Options{
			Host:    w.LocalServingHost,
			Port:    w.LocalServingPort,
			CertDir: w.LocalServingCertDir,
		})
	}
	for _, m := range mutate {
		m(&opts)
	}
	return ctrl.NewManager(e.Config, opts)
}

// StartManager starts mgr in the background and waits for its caches and, if
// the environment installed webhooks, for its webhook server. The returned
// stop cancels the manager and waits for it to exit, returning its error.
func (e *Environment) StartManager(ctx context.Context, mgr ctrl.Manager) (stop func() error, err error) {
	ctx, stop = RunManager(ctx, mgr)
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return stop, fmt.Errorf("manager caches did not sync: %w", stop())
	}
	if !e.webhooks {
		// Asking for the webhook server would make one.
		return stop, nil
	}
	check := mgr.GetWebhookServer().StartedChecker()
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		req, _ := http.NewRequest(http.MethodGet, "/", nil)
		return check(req) == nil, nil
	})
	if err != nil {
		return stop, fmt.Errorf("webhook server did not start: %w", err)
	}
	return stop, nil
}

// RunManager starts mgr in the background. The returned context ends when the
// manager stops, for any reason; stop cancels the manager, waits for it and
// returns its error, and may be called more than once.
func RunManager(ctx context.Context, mgr ctrl.Manager) (context.Context, func() error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- mgr.Start(ctx)
		cancel() // a manager that failed to start ends the waits on ctx
	}()
	return ctx, sync.OnceValue(func() error {
		cancel()
		return <-done
	})
}

// CreateNamespace creates a namespace with a generated name that starts
// with prefix.
func (e *Environment) CreateNamespace(ctx context.Context, prefix string) (*corev1.Namespace, error) {
	ns := &corev1.Namespace{}
	ns.GenerateName = prefix + "-"
	if err := e.Client.Create(ctx, ns); err != nil {
		return nil, fmt.Errorf("creating namespace %s-*: %w", prefix, err)
	}
	return ns, nil
}

// webhookConfigurations reads both providers' webhook configurations
// (config/webhook/<provider>) and, with capi, Cluster API core's. Each
// provider's are named alike, as the release manifests prefix them, so they
// are renamed here to coexist.
func webhookConfigurations(ctx context.Context, capi bool) (envtest.WebhookInstallOptions, error) {
	var opts envtest.WebhookInstallOptions
	files := map[string]string{}
	for _, provider := range []string{"infrastructure", "bootstrap"} {
		files[provider] = filepath.Join(RepoRoot(), "config", "webhook", provider, "manifests.yaml")
	}
	if capi {
		dir, err := moduleDir(ctx, "sigs.k8s.io/cluster-api")
		if err != nil {
			return opts, err
		}
		files["capi"] = filepath.Join(dir, "core", "config", "webhook", "manifests.yaml")
	}
	for provider, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			return opts, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var head metav1.TypeMeta
			var raw kruntime.RawExtension
			if err := dec.Decode(&raw); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return opts, fmt.Errorf("%s: %w", path, err)
			}
			if err := yaml.Unmarshal(raw.Raw, &head); err != nil {
				return opts, fmt.Errorf("%s: %w", path, err)
			}
			switch head.Kind {
			case "MutatingWebhookConfiguration":
				c := &admissionv1.MutatingWebhookConfiguration{}
				if err := yaml.Unmarshal(raw.Raw, c); err != nil {
					return opts, fmt.Errorf("%s: %w", path, err)
				}
				c.Name = provider + "-" + c.Name
				opts.MutatingWebhooks = append(opts.MutatingWebhooks, c)
			case "ValidatingWebhookConfiguration":
				c := &admissionv1.ValidatingWebhookConfiguration{}
				if err := yaml.Unmarshal(raw.Raw, c); err != nil {
					return opts, fmt.Errorf("%s: %w", path, err)
				}
				c.Name = provider + "-" + c.Name
				opts.ValidatingWebhooks = append(opts.ValidatingWebhooks, c)
			}
		}
	}
	return opts, nil
}

// RepoRoot is the root of the capwin source tree.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// AssetsDir returns the directory holding kube-apiserver and etcd:
// KUBEBUILDER_ASSETS when set, otherwise what hack/envtest-assets.sh prints
// (it builds the binaries on first use and answers from its cache after).
func AssetsDir(ctx context.Context) (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	cmd := exec.CommandContext(ctx, filepath.Join(RepoRoot(), "hack", "envtest-assets.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building the envtest control plane with hack/envtest-assets.sh: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// CRDDirectories returns capwin's CRD directory and the Cluster API CRD
// directories (core, kubeadm bootstrap, kubeadm control plane) of the
// Cluster API module this build uses.
func CRDDirectories(ctx context.Context) ([]string, error) {
	capi, err := moduleDir(ctx, "sigs.k8s.io/cluster-api")
	if err != nil {
		return nil, err
	}
	return []string{
		filepath.Join(RepoRoot(), "config", "crd", "infrastructure", "bases"),
		filepath.Join(RepoRoot(), "config", "crd", "bootstrap", "bases"),
		filepath.Join(capi, "core", "config", "crd", "bases"),
		filepath.Join(capi, "bootstrap", "kubeadm", "config", "crd", "bases"),
		filepath.Join(capi, "controlplane", "kubeadm", "config", "crd", "bases"),
	}, nil
}

// ModuleDir returns the module cache directory of module at version,
// downloading it through the module proxy if needed; for modules capwin reads
// files of without importing them (cert-manager's CRDs).
func ModuleDir(ctx context.Context, module, version string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module+"@"+version)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return "", fmt.Errorf("downloading %s@%s: %w", module, version, err)
	}
	var info struct{ Dir string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		return "", fmt.Errorf("downloading %s@%s: no directory in %q", module, version, out)
	}
	return info.Dir, nil
}

// moduleDir returns the module cache directory of a dependency of capwin.
func moduleDir(ctx context.Context, module string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return "", fmt.Errorf("finding module %s: %w", module, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("module %s is not in the module cache: run 'go mod download %s'", module, module)
	}
	return dir, nil
}
