// Command capwin-manager runs capwin's providers: infrastructure-capwin (the
// HybridCluster, HybridMachine and HybridMachineTemplate reconcilers and
// their webhooks) and bootstrap-capwin (the WindowsKubeadmConfig reconciler
// and its webhooks). One image holds both; --providers picks what runs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	// The image is built FROM scratch (make image, hack/image): it has no
	// CA bundle, yet the manager talks TLS to Azure's endpoints and to
	// vCenters whose certificates a public CA may sign. This embeds
	// Mozilla's roots (NSS, with their distrust-after constraints), which
	// Go uses only when the system has none, so a bundle mounted at
	// /etc/ssl/certs or named by SSL_CERT_FILE still wins. Kept current by
	// `go get golang.org/x/crypto/x509roots/fallback@latest` like any
	// module; nothing here flags a stale bundle.
	_ "golang.org/x/crypto/x509roots/fallback"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/capwin/capwin/bootstrap/reconciler"
	"github.com/capwin/capwin/internal/scheme"
	capwinsetup "github.com/capwin/capwin/setup"
)

const controllerName = "capwin-manager"

type options struct {
	providers      []string
	namespace      string
	metricsAddr    string
	probeAddr      string
	webhookPort    int
	webhookCertDir string
	leaderElect    bool
	concurrency    int
	tokenTTL       time.Duration
	syncPeriod     time.Duration
	// skipNameValidation lets tests run several managers in one process.
	skipNameValidation bool
}

func parseFlags(args []string) (options, error) {
	o := options{}
	fs := flag.NewFlagSet(controllerName, flag.ContinueOnError)
	providers := fs.String("providers", capwinsetup.ProviderInfrastructure+","+capwinsetup.ProviderBootstrap, "the providers to run: infrastructure, bootstrap, or both, comma-separated")
	fs.StringVar(&o.namespace, "namespace", os.Getenv("POD_NAMESPACE"), "the namespace the manager runs in: HybridClusterIdentity Secrets are read from it")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8443", "where metrics are served; 0 turns them off")
	fs.StringVar(&o.probeAddr, "health-addr", ":9440", "where /healthz and /readyz are served")
	fs.IntVar(&o.webhookPort, "webhook-port", 9443, "the webhook server's port; 0 turns webhooks off")
	fs.StringVar(&o.webhookCertDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "the webhook server's certificate directory")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "elect a leader, for more than one replica")
	fs.IntVar(&o.concurrency, "concurrency", 10, "reconciles run at once per kind")
	fs.DurationVar(&o.tokenTTL, "bootstrap-token-ttl", reconciler.DefaultTokenTTL, "lifetime of a bootstrap token between refreshes")
	fs.DurationVar(&o.syncPeriod, "sync-period", 10*time.Minute, "how often every object is reconciled again")
	klog.InitFlags(fs) // --v and the other logging flags
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	for _, p := range strings.Split(*providers, ",") {
		p = strings.TrimSpace(p)
		if p != capwinsetup.ProviderInfrastructure && p != capwinsetup.ProviderBootstrap {
			return o, fmt.Errorf("--providers: %q is not %s or %s", p, capwinsetup.ProviderInfrastructure, capwinsetup.ProviderBootstrap)
		}
		o.providers = append(o.providers, p)
	}
	return o, nil
}

func main() {
	ctrl.SetLogger(klog.Background())
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		klog.ErrorS(err, "Unable to load the kubeconfig")
		os.Exit(1)
	}
	if err := run(ctrl.SetupSignalHandler(), cfg, o); err != nil {
		klog.ErrorS(err, "capwin-manager stopped")
		os.Exit(1)
	}
}

// run builds the manager for the chosen providers and runs it until ctx ends.
func run(ctx context.Context, cfg *rest.Config, o options) error {
	mgr, err := newManager(ctx, cfg, o)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

func newManager(ctx context.Context, cfg *rest.Config, o options) (ctrl.Manager, error) {
	s := scheme.New()
	mgrOpts := ctrl.Options{
		Scheme:                 s,
		Metrics:                metricsserver.Options{BindAddress: o.metricsAddr, SecureServing: o.metricsAddr != "0"},
		HealthProbeBindAddress: o.probeAddr,
		LeaderElection:         o.leaderElect,
		LeaderElectionID:       "capwin-manager-leader-election",
		Cache:                  capwinsetup.CacheOptions(o.syncPeriod),
		Client:                 capwinsetup.ClientOptions(),
	}
	if o.skipNameValidation {
		mgrOpts.Controller.SkipNameValidation = ptr.To(true)
	}
	if o.webhookPort != 0 {
		mgrOpts.WebhookServer = webhook.NewServer(webhook.Options{Port: o.webhookPort, CertDir: o.webhookCertDir})
	}
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := errors.Join(mgr.AddHealthzCheck("ping", healthz.Ping), mgr.AddReadyzCheck("ping", healthz.Ping)); err != nil {
		return nil, err
	}
	if err := capwinsetup.Setup(ctx, mgr, capwinsetup.Options{
		Providers:   o.providers,
		Namespace:   o.namespace,
		Concurrency: o.concurrency,
		TokenTTL:    o.tokenTTL,
		Webhooks:    o.webhookPort != 0,
		Name:        controllerName,
	}); err != nil {
		return nil, err
	}
	return mgr, nil
}
