// Package sim composes, in one process, everything a capwin cluster needs
// with simulators in place of the data centre: an envtest management API
// server with capwin's and Cluster API's CRDs and webhooks, the real Cluster
// API core reconcilers and webhooks, capwin's controllers (as capwin-manager
// runs them), govmomi's vcsim as the vCenter (or, with Options.Platform
// azure, platform/azure/azuresim as the Azure subscription), a second API server as the
// workload cluster, set up as kubeadm leaves one and with the controller
// manager's controllers a join needs (test/kubeadm), a guest simulator that
// plays each VM's operating system (it reads the VM's metadata and user data
// as cloudbase-init or cloud-init would, reports to vCenter as VMware Tools
// does, and on Windows runs capwin-node's real join, whose simulated
// kubelet registers the Node with its own credentials), and the workload
// cluster's vSphere cloud controller manager, which gives each Node its
// provider ID (on Azure, cloud-provider-azure's cloud-node-manager does:
// azureccm.go).
//
// `capwin dev` and the end-to-end tests (test/e2e) run on it.
package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/capwin/capwin/platform/azure"
	"github.com/capwin/capwin/platform/azure/azuresim"
	"github.com/capwin/capwin/platform/vsphere/vspheresim"
	capwinsetup "github.com/capwin/capwin/setup"
	"github.com/capwin/capwin/test/envtest"
	"github.com/capwin/capwin/test/kubeadm"
	"github.com/capwin/capwin/webhooks"
)

// The vCenter simulator's account, and where capwin-manager runs.
const (
	VCenterUser         = vspheresim.User
	VCenterPassword     = vspheresim.Password
	ControllerNamespace = "capwin-system"
)

// Options configure a simulation.
type Options struct {
	// BootDelay is how long a VM takes from power-on to a Ready Node.
	BootDelay time.Duration
	// Log receives the controllers' and the guests' logs; discarded when
	// unset.
	Log logr.Logger
	// WithoutCloudControllerManager leaves the workload cluster's vSphere
	// cloud controller manager stopped, as if its pod never ran, until
	// StartCloudControllerManager: no Node gets a provider ID.
	WithoutCloudControllerManager bool
	// Platform is where the VMs run: PlatformVSphere (when empty), a
	// simulated vCenter, or PlatformAzure, a simulated Azure subscription.
	Platform string
}

// The platforms a simulation runs on.
const (
	PlatformVSphere = "vsphere"
	PlatformAzure   = "azure"
)

// Sim is a running simulation.
type Sim struct {
	// Management is the management cluster: Cluster API and capwin run
	// against it.
	Management *envtest.Environment
	// Workload is the workload cluster's API server; the guests register
	// their Nodes in it. Kubeadm is the same, with what kubeadm init set up
	// in it and the controller manager's controllers a join needs.
	Workload *envtest.Environment
	Kubeadm  *kubeadm.Cluster
	// VCenter is the simulated vCenter, on vSphere.
	VCenter *vspheresim.VCenter
	// Azure is the simulated Azure subscription, on Azure.
	Azure *azuresim.Cloud
	// Guests plays the VMs' operating systems.
	Guests *Guests

	platform string
	// shared is set on a second management cluster (StartManagement):
	// the vCenter, Azure and the workload cluster are not its to stop.
	shared bool
	ccm    interface {
		run(ctx context.Context)
		Err() error
	}
	ccmCtx context.Context

	log logr.Logger

	mu         sync.Mutex
	stopCAPI   func() error
	stopCapwin func() error
	stopGuests func()
	stopCCM    func()
	stopOnce   sync.Once
	stopErr    error
}

// startVCenter starts the simulated vCenter with its Windows template.
func startVCenter() (*vspheresim.VCenter, error) {
	v, err := vspheresim.Start()
	if err != nil {
		return nil, err
	}
	for vm, guestID := range map[string]string{WindowsTemplate: windowsGuestID, Windows2025Template: windows2025GuestID} {
		if err := v.SetGuestID(context.Background(), "/DC0/vm/"+vm, guestID); err != nil {
			v.Stop()
			return nil, fmt.Errorf("marking the Windows template %s: %w", vm, err)
		}
	}
	return v, nil
}

// WindowsTemplate and LinuxTemplate are the inventory's VMs the flavors
// clone: the Windows one is given a Windows guest ID, as a Windows Server
// template has, and its clones inherit it. Windows2025Template is a
// Windows Server 2025 template, for windowsRelease ltsc2025.
const (
	WindowsTemplate     = "DC0_H0_VM1"
	LinuxTemplate       = "DC0_H0_VM0"
	Windows2025Template = "DC0_C0_RP0_VM0"
)

// windows2025GuestID is vSphere's guest ID of Windows Server 2025.
const windows2025GuestID = "windows2022srvNext_64Guest"

// windowsGuestID is the Windows template's guest ID, a Windows Server
// one (vSphere's windows2019srvNext_64Guest).
const windowsGuestID = "windows2019srvNext_64Guest"

// Start starts the management and workload API servers, the vCenter
// simulator, Cluster API's and capwin's controllers and the guests.
func Start(ctx context.Context, opts Options) (s *Sim, err error) {
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	ctrl.SetLogger(opts.Log)
	// The cloud node controllers and client-go log through klog.
	klog.SetLogger(opts.Log.WithName("klog"))
	switch opts.Platform {
	case "":
		opts.Platform = PlatformVSphere
	case PlatformVSphere, PlatformAzure:
	default:
		return nil, fmt.Errorf("platform %q: the simulation runs on %s or %s", opts.Platform, PlatformVSphere, PlatformAzure)
	}
	s = &Sim{log: opts.Log, platform: opts.Platform}
	endpoint := ControlPlaneEndpointIP
	if opts.Platform == PlatformAzure {
		endpoint = AzureControlPlaneEndpointIP
	}
	defer func() {
		if err != nil {
			_ = s.Stop()
		}
	}()

	// The two API servers start together: each takes a few seconds.
	var wg sync.WaitGroup
	var mgmtErr, workloadErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		s.Management, mgmtErr = envtest.Start(ctx, envtest.Options{Webhooks: true, CAPIWebhooks: true})
	}()
	go func() {
		defer wg.Done()
		// Once a cluster has been reached through Cluster API's
		// ClusterCache, this kube-apiserver does not stop on SIGTERM within
		// a minute; nothing of it is kept, so it is killed after a few
		// seconds.
		s.Kubeadm, workloadErr = kubeadm.Start(ctx, kubeadm.Options{Controllers: true, ServingIPs: []string{endpoint}, StopTimeout: 5 * time.Second, Log: opts.Log.WithName("kube-controller-manager")})
		if workloadErr == nil {
			s.Workload = s.Kubeadm.Env
		}
	}()
	wg.Wait()
	if err := errors.Join(mgmtErr, workloadErr); err != nil {
		return s, fmt.Errorf("starting the API servers: %w", err)
	}
	if opts.Platform == PlatformAzure {
		// ARM's refill of writes for a principal in a subscription;
		// capwin's clients keep under it by default.
		s.Azure = azuresim.New(azuresim.Options{SubscriptionID: AzureSubscription, Polls: 1, WritesPerSecond: 10})
	} else if s.VCenter, err = startVCenter(); err != nil {
		return s, err
	}
	if err := s.startControllers(ctx); err != nil {
		return s, err
	}
	if s.Azure != nil {
		s.Guests, err = newGuests(azureVMs{s.Azure}, s.Kubeadm, opts.BootDelay, opts.Log.WithName("guest"))
	} else {
		s.Guests, err = newVCenterGuests(ctx, s.VCenter, s.Kubeadm, opts.BootDelay, opts.Log.WithName("guest"))
	}
	if err != nil {
		return s, err
	}
	gctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var done sync.WaitGroup
	done.Go(func() { s.Guests.run(gctx) })
	s.stopGuests = func() { cancel(); done.Wait() }
	if err := s.startHousekeeping(gctx, &done); err != nil {
		return s, err
	}
	if s.Azure != nil {
		s.ccm = &azureNodeManager{addonPod: addonPod{name: "cloud-node-manager", log: opts.Log.WithName("cloud-node-manager")}, workload: s.Workload.Client, config: s.Workload.Config, cloud: s.Azure, guests: s.Guests}
	} else {
		s.ccm = &cloudControllerManager{addonPod: addonPod{name: "The cloud controller manager", log: opts.Log.WithName("ccm")}, workload: s.Workload.Client, config: s.Workload.Config}
	}
	s.ccmCtx = gctx
	if !opts.WithoutCloudControllerManager {
		s.StartCloudControllerManager()
	}
	return s, nil
}

// startControllers creates the controllers' namespace and starts Cluster
// API's and capwin's controllers against s.Management.
func (s *Sim) startControllers(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ControllerNamespace}}
	if err := s.Management.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ControllerNamespace, err)
	}
	if err := s.startCAPI(ctx); err != nil {
		return err
	}
	return s.StartCapwin(ctx)
}

// startHousekeeping runs, in done until ctx ends, what a management
// cluster has besides the controllers: the garbage collector and the
// stand-ins for the control plane: for a stand-alone control-plane
// Machine's initialisation, and for the KubeadmControlPlane controller.
func (s *Sim) startHousekeeping(ctx context.Context, done *sync.WaitGroup) error {
	c, err := client.New(s.Management.Config, client.Options{Scheme: s.Management.Scheme})
	if err != nil {
		return err
	}
	done.Go(func() { collectGarbage(ctx, c, s.log.WithName("gc")) })
	done.Go(func() { standInForControlPlane(ctx, c, s.Workload.Client, s.log.WithName("control-plane")) })
	done.Go(func() { playKubeadmControlPlanes(ctx, c, s.Workload.Client, s.log.WithName("kubeadm-control-plane")) })
	return nil
}

// StartManagement starts a second management cluster for s's data centre
// and workload cluster, as `clusterctl init` leaves a new one: an API
// server of its own with every CRD and webhook, Cluster API's and capwin's
// controllers and the garbage collector, and no cluster. The vCenter (or
// Azure subscription), the workload API server and the guests are s's,
// shared: the returned Sim's Stop stops only what StartManagement started.
// It is the target of a `clusterctl move` (test/e2e).
func (s *Sim) StartManagement(ctx context.Context) (m *Sim, err error) {
	m = &Sim{
		log: s.log.WithName("target"), platform: s.platform, shared: true,
		Workload: s.Workload, Kubeadm: s.Kubeadm, VCenter: s.VCenter, Azure: s.Azure, Guests: s.Guests,
	}
	defer func() {
		if err != nil {
			_ = m.Stop()
		}
	}()
	if m.Management, err = envtest.Start(ctx, envtest.Options{Webhooks: true, CAPIWebhooks: true}); err != nil {
		return m, fmt.Errorf("starting the second management API server: %w", err)
	}
	if err := m.startControllers(ctx); err != nil {
		return m, err
	}
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var done sync.WaitGroup
	m.stopGuests = func() { cancel(); done.Wait() }
	return m, m.startHousekeeping(hctx, &done)
}

// StartCloudControllerManager lets the workload cluster's cloud provider
// run: the vSphere cloud controller manager (cloudControllerManager),
// which starts once its DaemonSet, configuration and credentials are in
// the workload cluster and a Node may run its pod, or on Azure
// cloud-node-manager (azureNodeManager). It does nothing while it runs.
func (s *Sim) StartCloudControllerManager() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopCCM != nil || s.ccm == nil {
		return
	}
	ctx, cancel := context.WithCancel(s.ccmCtx)
	var wg sync.WaitGroup
	wg.Go(func() { s.ccm.run(ctx) })
	s.stopCCM = func() { cancel(); wg.Wait() }
}

// StopCloudControllerManager stops the cloud controller manager, as if its
// pod were gone: Nodes that register from now on stay uninitialised. (A
// node sync already under way may still finish: the node controller does
// not wait for its workers, and its vCenter calls fail once it is stopped.)
func (s *Sim) StopCloudControllerManager() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopCCM != nil {
		s.stopCCM()
		s.stopCCM = nil
	}
}

// CloudControllerManagerErr is why the cloud controller manager has not
// started though its DaemonSet exists; nil when it runs.
func (s *Sim) CloudControllerManagerErr() error {
	if s.ccm == nil {
		return errors.New("the simulation did not start")
	}
	return s.ccm.Err()
}

// startCAPI runs what Cluster API's core manager runs: the core reconcilers
// and, on the environment's one webhook server, Cluster API's webhooks and
// capwin's (a cluster's webhooks all answer on one address in envtest).
func (s *Sim) startCAPI(ctx context.Context) error {
	mgr, err := s.Management.NewManager(func(o *manager.Options) { o.Logger = s.log.WithName("capi") })
	if err != nil {
		return err
	}
	cc, err := envtest.SetupCoreReconcilers(ctx, mgr)
	if err != nil {
		return err
	}
	if err := envtest.SetupCoreWebhooks(mgr, cc); err != nil {
		return fmt.Errorf("setting up Cluster API's webhooks: %w", err)
	}
	// capwin's webhooks: the reconcilers run in a manager of their own
	// (StartCapwin), so that they can be restarted on their own.
	if err := errors.Join(webhooks.SetupInfrastructure(mgr), webhooks.SetupBootstrap(mgr)); err != nil {
		return fmt.Errorf("setting up capwin's webhooks: %w", err)
	}
	stop, err := s.Management.StartManager(context.WithoutCancel(ctx), mgr)
	if err != nil {
		if stop != nil {
			_ = stop()
		}
		return fmt.Errorf("starting Cluster API's controllers: %w", err)
	}
	s.stopCAPI = stop
	return nil
}

// StartCapwin starts capwin's controllers (both providers) as capwin-manager
// runs them. It is how a test restarts them after StopCapwin.
func (s *Sim) StartCapwin(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopCapwin != nil {
		return errors.New("capwin's controllers are already running")
	}
	mgr, err := s.Management.NewManager(func(o *manager.Options) {
		o.Logger = s.log.WithName("capwin")
		// As capwin-manager: Secrets and ConfigMaps read uncached, the
		// clusters' Secrets cached for the ClusterCache.
		o.Cache = capwinsetup.CacheOptions(10 * time.Minute)
		o.Client = capwinsetup.ClientOptions()
		o.WebhookServer = nil
	})
	if err != nil {
		return err
	}
	err = capwinsetup.Setup(ctx, mgr, capwinsetup.Options{
		Providers:   []string{capwinsetup.ProviderInfrastructure, capwinsetup.ProviderBootstrap},
		Namespace:   ControllerNamespace,
		Concurrency: 10,
		Name:        "capwin-manager",
		Azure:       s.azureClients(),
	})
	if err != nil {
		return err
	}
	mctx, stop := envtest.RunManager(context.WithoutCancel(ctx), mgr)
	if !mgr.GetCache().WaitForCacheSync(mctx) {
		return fmt.Errorf("capwin's controllers: caches did not sync: %w", stop())
	}
	s.stopCapwin = stop
	return nil
}

// azureClients points capwin's ARM clients at the simulated Azure, with
// capwin-manager's retry settings, when there is one.
func (s *Sim) azureClients() azure.Options {
	if s.Azure == nil {
		return azure.Options{}
	}
	opts := s.Azure.ClientOptions()
	opts.Retry = azure.RetryOptions()
	return azure.Options{
		ClientOptions: opts,
		NewCredential: func(azure.Credentials) (azcore.TokenCredential, error) { return azuresim.Credential(), nil },
	}
}

// StopCapwin stops capwin's controllers, as a crash or an upgrade of
// capwin-manager would; Cluster API's keep running.
func (s *Sim) StopCapwin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopCapwin == nil {
		return nil
	}
	err := s.stopCapwin()
	s.stopCapwin = nil
	return err
}

// Stop stops everything, controllers first, and removes the API servers'
// data. Calls after the first return the first's result.
func (s *Sim) Stop() error {
	s.stopOnce.Do(func() { s.stopErr = s.stop() })
	return s.stopErr
}

func (s *Sim) stop() error {
	var errs []error
	s.StopCloudControllerManager()
	if s.stopGuests != nil {
		s.stopGuests()
	}
	errs = append(errs, s.StopCapwin())
	if s.stopCAPI != nil {
		errs = append(errs, s.stopCAPI())
	}
	if s.VCenter != nil && !s.shared {
		s.VCenter.Stop()
	}
	if s.Management != nil {
		errs = append(errs, s.Management.Stop())
	}
	if s.Kubeadm != nil && !s.shared {
		// Killed after its short StopTimeout (see Start): logged, not an
		// error.
		if err := s.Kubeadm.Stop(); err != nil {
			s.log.Info("The workload API server was killed", "reason", err.Error())
		}
	}
	return errors.Join(errs...)
}

// WriteKubeconfigs writes a kubeconfig for each API server into dir and
// returns their paths.
func (s *Sim) WriteKubeconfigs(dir string) (management, workload string, err error) {
	management = filepath.Join(dir, "management.kubeconfig")
	workload = filepath.Join(dir, "workload.kubeconfig")
	for path, cfg := range map[string]*rest.Config{management: s.Management.Config, workload: s.Workload.Config} {
		data, err := Kubeconfig(cfg, "sim")
		if err != nil {
			return "", "", err
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return "", "", err
		}
	}
	return management, workload, nil
}

// Kubeconfig renders cfg (an envtest admin configuration) as a kubeconfig
// with one context named name.
func Kubeconfig(cfg *rest.Config, name string) ([]byte, error) {
	c := clientcmdapi.NewConfig()
	c.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	c.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	c.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	c.CurrentContext = name
	return clientcmd.Write(*c)
}
