// Package setup registers capwin's reconcilers and webhooks with a
// controller-runtime manager: what capwin-manager runs, and what the
// simulated environment (test/sim) runs, so both run the same thing.
package setup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	crmanager "sigs.k8s.io/controller-runtime/pkg/manager"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	capisetup "sigs.k8s.io/cluster-api/core/setup"
	"sigs.k8s.io/cluster-api/util/secret"

	"github.com/capwin/capwin/bootstrap/reconciler"
	"github.com/capwin/capwin/controllers"
	"github.com/capwin/capwin/platform/azure"
	"github.com/capwin/capwin/platform/factory"
	"github.com/capwin/capwin/webhooks"
)

// The providers one capwin-manager can run.
const (
	ProviderInfrastructure = "infrastructure"
	ProviderBootstrap      = "bootstrap"
)

// Options chooses what Setup registers.
type Options struct {
	// Providers are ProviderInfrastructure, ProviderBootstrap or both.
	Providers []string
	// Namespace is the manager's own namespace: HybridClusterIdentity
	// Secrets are read from it.
	Namespace string
	// Concurrency is how many reconciles of one kind run at once.
	Concurrency int
	// TokenTTL is a bootstrap token's lifetime between refreshes.
	TokenTTL time.Duration
	// Webhooks registers the providers' webhooks on the manager's server.
	Webhooks bool
	// Name names the manager's clients to the API server.
	Name string
	// Azure configures the ARM clients; the zero value reaches Azure's
	// public cloud. The simulation (test/sim) points them at its simulated
	// Azure here.
	Azure azure.Options
}

// Setup registers the chosen providers' reconcilers (and webhooks) with mgr.
func Setup(ctx context.Context, mgr ctrl.Manager, o Options) error {
	copts := controller.Options{MaxConcurrentReconciles: o.Concurrency}
	infrastructure, bootstrap := slices.Contains(o.Providers, ProviderInfrastructure), slices.Contains(o.Providers, ProviderBootstrap)
	if !infrastructure && !bootstrap {
		return nil
	}
	// One ClusterCache for both providers, as Cluster API's own manager
	// gives one to all its reconcilers: one connection, and one health
	// check, per workload cluster.
	cc, err := clusterCache(ctx, mgr, o, copts)
	if err != nil {
		return err
	}
	if infrastructure {
		platforms := factory.New(mgr.GetClient(), o.Namespace)
		platforms.Azure = azure.NewClients(o.Azure)
		if err := errors.Join(
			(&controllers.HybridClusterReconciler{Client: mgr.GetClient(), Platforms: platforms}).SetupWithManager(mgr, copts),
			(&controllers.HybridMachineReconciler{Client: mgr.GetClient(), Platforms: platforms, ClusterCache: cc}).SetupWithManager(mgr, copts),
			(&controllers.HybridMachineTemplateReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr, copts),
			// Logs out of idle vCenter sessions, and of all of them when
			// the manager stops.
			mgr.Add(crmanager.RunnableFunc(func(ctx context.Context) error {
				return platforms.Start(logr.NewContext(ctx, mgr.GetLogger()))
			})),
		); err != nil {
			return fmt.Errorf("setting up the infrastructure reconcilers: %w", err)
		}
		if o.Webhooks {
			if err := webhooks.SetupInfrastructure(mgr); err != nil {
				return err
			}
		}
	}
	if bootstrap {
		r := &reconciler.Reconciler{Client: mgr.GetClient(), ClusterCache: cc, TokenTTL: o.TokenTTL}
		if err := r.SetupWithManager(mgr, copts); err != nil {
			return fmt.Errorf("setting up the WindowsKubeadmConfig reconciler: %w", err)
		}
		if o.Webhooks {
			if err := webhooks.SetupBootstrap(mgr); err != nil {
				return err
			}
		}
	}
	return nil
}

// clusterCache sets up the ClusterCache through which the providers reach
// workload clusters.
func clusterCache(ctx context.Context, mgr ctrl.Manager, o Options, copts controller.Options) (clustercache.ClusterCache, error) {
	secretClient, err := capisetup.CreateSecretCachingClient(mgr)
	if err != nil {
		return nil, err
	}
	cc, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
		SecretClient: secretClient,
		Cache:        controllers.ClusterCacheOptions(),
		Client:       capisetup.ClusterCacheClientOptions(o.Name, 20, 30),
	}, copts)
	if err != nil {
		return nil, fmt.Errorf("setting up the ClusterCache: %w", err)
	}
	return cc, nil
}

// CacheOptions caches only the Secrets of clusters (those with the
// cluster-name label), as Cluster API's managers do: the manager's client
// reads Secrets uncached anyway, the ClusterCache reads kubeconfigs cached.
// What the reconcilers never read from the cache is dropped as objects
// enter it, so that a manager of a thousand machines holds only what it
// uses: every object's managed fields, and the data of every cached Secret
// but a cluster's kubeconfig (the HybridMachine reconciler watches
// bootstrap data Secrets for their names only, and reads their data from
// the API server). The manager's client must be made with ClientOptions.
func CacheOptions(syncPeriod time.Duration) cache.Options {
	req, _ := labels.NewRequirement(clusterv1.ClusterNameLabel, selection.Exists, nil)
	return cache.Options{
		SyncPeriod:       &syncPeriod,
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Label: labels.NewSelector().Add(*req), Transform: keepOnlyKubeconfigData},
		},
	}
}

// keepOnlyKubeconfigData strips a cached Secret's managed fields, and its
// data unless it is a cluster's kubeconfig: by the rule Cluster API's own
// manager keeps data by, a name ending in -kubeconfig (the ClusterCache
// reads <Cluster name>-kubeconfig, whatever its label says).
func keepOnlyKubeconfigData(in any) (any, error) {
	s, ok := in.(*corev1.Secret)
	if !ok {
		return in, nil
	}
	s.ManagedFields = nil
	if !strings.HasSuffix(s.Name, "-"+string(secret.Kubeconfig)) {
		s.Data, s.StringData = nil, nil
	}
	return s, nil
}

// ClientOptions are the manager's client options that CacheOptions relies
// on: Secrets (and ConfigMaps) read from the API server, never from the
// cache, whose Secrets carry no data but kubeconfigs'. They are Cluster
// API's manager's.
func ClientOptions() client.Options {
	return capisetup.ManagerClientOptions()
}
